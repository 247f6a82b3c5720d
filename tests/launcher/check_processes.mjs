// Checks the merged profile of `inprof record -- sh children.sh` (run_children_test.sh) with the
// Firefox Profiler's own code: three processes (the shell, sort and gzip), each its own process
// track with its pid and its command line as its name, each with a main thread. --complete: the
// run's dumps were all complete (Profile Info's "Dump complete": the shell's too, which leaves by
// _exit, finished by `inprof record` from its lifeboat).
//
//   node check_processes.mjs --profile X.json --profile-check PATH --cli PATH/profiler-cli.js
//                            [--complete]
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const e2eDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'e2e');
const { run, withSession } = await import(join(e2eDir, 'profiler_cli.mjs'));

const { values: options } = parseArgs({
  options: {
    profile: { type: 'string' },
    'profile-check': { type: 'string' },
    cli: { type: 'string' },
    complete: { type: 'boolean' },
  },
});
if (!options.profile || !options['profile-check'] || !options.cli) {
  console.error('usage: node check_processes.mjs --profile X.json --profile-check PATH --cli PATH');
  process.exit(2);
}

const failures = [];
function fail(message) {
  failures.push(message);
  console.log(`FAIL: ${message}`);
}

try {
  run(options['profile-check'], [options.profile]);
  console.log('ok: profile_check found no problems');
} catch (e) {
  fail(`profile_check rejected the profile: ${e.message}`);
}

try {
  withSession(options.cli, options.profile, 'procs', (cli) => {
    const list = JSON.parse(cli('thread', 'list', '--json'));
    console.log(`profiler-cli: ${list.totalThreadCount} threads in ${list.processCount} processes`);
    for (const t of list.threads) console.log(`  pid ${t.pid} "${t.processName}": ${t.name} (tid ${t.tid})`);
    if (list.processCount !== 3) fail(`${list.processCount} processes, expected 3`);
    const pids = new Set(list.threads.map((t) => t.pid));
    if (pids.size !== 3) fail(`${pids.size} distinct pids, expected 3`);
    for (const program of ['sh', 'sort', 'gzip']) {
      const threads = list.threads.filter((t) => t.processName.split(' ')[0] === program);
      if (threads.length === 0) fail(`no process named after ${program}`);
      // The process's main thread: tid = pid.
      else if (!threads.some((t) => String(t.tid) === String(t.pid))) fail(`${program}: no main thread`);
    }
    const sort = list.threads.find((t) => t.processName.startsWith('sort'));
    if (sort && !sort.processName.includes('numbers')) {
      fail(`the sort process is not named by its command line: "${sort.processName}"`);
    }
    const info = cli('profile', 'info', '--all');
    if (!/3 processes/.test(info)) fail(`profile info does not say 3 processes:\n${info}`);
  }, (e) => fail(`profiler-cli stop: ${e.message}`));
} catch (e) {
  fail(`profiler-cli: ${e.message}`);
}

if (options.complete) {
  let bytes = readFileSync(options.profile);
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = gunzipSync(bytes);
  const meta = JSON.parse(bytes.toString('utf8')).meta;
  const entries = (meta.extra || []).flatMap((group) => group.entries || []);
  const complete = entries.filter((e) => e.label === 'Dump complete').map((e) => e.value);
  console.log(`Dump complete: ${JSON.stringify(complete)}`);
  if (complete.length !== 1 || complete[0] !== 'yes') fail(`the run's dumps are not all complete`);
}

if (failures.length > 0) {
  console.log(`check_processes: ${failures.length} check(s) failed`);
  process.exit(1);
}
console.log('check_processes: all checks passed');
