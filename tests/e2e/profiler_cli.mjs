// Driving @firefox-devtools/profiler-cli from the end-to-end checks: one daemon session per
// check, waited for when its daemon is slow to come up, and always stopped.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const kCommandTimeoutMs = 120_000;

// Runs a command and returns its stdout; a non-zero exit (or a crash or timeout) is an error.
export function run(file, args, env = process.env) {
  const r = spawnSync(file, args, { env, encoding: 'utf8', timeout: kCommandTimeoutMs });
  const shown = [file, ...args].join(' ');
  if (r.error) throw new Error(`${shown}: ${r.error.message}`);
  if (r.status !== 0) {
    const why = r.status === null ? `killed by ${r.signal}` : `exit status ${r.status}`;
    throw new Error(`${shown}: ${why}\n${r.stdout}${r.stderr}`);
  }
  return r.stdout;
}

const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// Waits for a daemon still starting to answer `status`: true once it does, false if it died.
function awaitDaemon(cli, pid) {
  const deadline = Date.now() + kCommandTimeoutMs;
  while (Date.now() < deadline) {
    try {
      cli('status');
      return true;
    } catch {
      if (!alive(pid)) return false;
      sleep(250);
    }
  }
  return false;
}

// Loads `profile` in a new session and calls body(cli), where cli(...args) runs one command in
// that session and returns its stdout. The session is stopped and its directory removed whatever
// happens; a failing stop is reported through onStopError.
export function withSession(cliPath, profile, prefix, body, onStopError) {
  // Unix socket paths are short (108 bytes), so the session lives in a short temporary directory.
  const base = tmpdir().length <= 40 ? tmpdir() : '/tmp';
  const sessionDir = mkdtempSync(join(base, 'pq-'));
  const env = { ...process.env, PROFILER_CLI_SESSION_DIR: sessionDir, PROFILER_CLI_NO_SYMBOLICATE: '1' };
  let session = prefix;
  const cli = (...args) => run(process.execPath, [cliPath, ...args, '--session', session], env);
  try {
    // `load` gives its daemon only 500 ms to come up (hard-coded), too little on a busy machine;
    // it then says so, with the daemon's pid, and leaves that daemon starting. It is waited for
    // (its `status` answers once the profile is loaded); only if it died is the load retried in
    // a new session.
    for (let attempt = 1; ; ++attempt) {
      session = `${prefix}-${attempt}`;
      try {
        cli('load', profile);
        break;
      } catch (e) {
        const slow = /did not become ready[^]*?pid (\d+)/.exec(e.message);
        if (!slow || attempt === 4) throw e;
        const pid = Number(slow[1]);
        if (awaitDaemon(cli, pid)) {
          console.log(`note: the profiler-cli daemon was slow to start (attempt ${attempt}); waited for it`);
          break;
        }
        console.log(`note: the profiler-cli daemon died while starting (attempt ${attempt}); retrying`);
      }
    }
    return body(cli);
  } finally {
    // Even a failed load can leave its daemon running.
    try {
      cli('stop');
    } catch (e) {
      onStopError(e);
    }
    rmSync(sessionDir, { recursive: true, force: true });
  }
}
