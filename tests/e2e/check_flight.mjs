// Checks what flight_target (see flight_target.cc) wrote: two captures of a ring-mode session,
// the capture stop() wrote, and two crash captures (SIGSEGV, abort). Each is symbolicated, checked
// structurally (profile_check) and loaded with the Firefox Profiler's own code (profiler-cli).
//
//   INPROF_SYMBOLICATE=PATH node check_flight.mjs --profile DIR/e2e.json --profile-check PATH \
//       --cli PATH/profiler-cli.js
//
// DIR/e2e.json is the stop() capture (run_e2e.sh converted it); the other dumps sit beside it.
// Exit status 0 when every check passes, 1 otherwise, 2 on bad usage.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';

import { run, withSession } from './profiler_cli.mjs';

let options;
try {
  ({ values: options } = parseArgs({
    options: {
      profile: { type: 'string' },
      'profile-check': { type: 'string' },
      cli: { type: 'string' },
    },
  }));
} catch (e) {
  console.error(`check_flight: ${e.message}`);
  process.exit(2);
}
const symbolicate = process.env.INPROF_SYMBOLICATE;
if (!options.profile || !options['profile-check'] || !options.cli || !symbolicate) {
  console.error('usage: INPROF_SYMBOLICATE=PATH node check_flight.mjs --profile X.json ' +
                '--profile-check PATH --cli PATH');
  process.exit(2);
}

const failures = [];
function check(condition, message, diagnostic = '') {
  if (condition) {
    console.log(`ok: ${message}`);
    return true;
  }
  failures.push(message);
  console.log(`FAIL: ${message}`);
  if (diagnostic) console.log(diagnostic);
  return false;
}

const dir = dirname(options.profile);
const dump = join(dir, 'e2e.inprof');
const expect = JSON.parse(readFileSync(`${dump}.expect.json`, 'utf8'));

// Symbolicates a dump (unless it is the JSON run_e2e.sh made), checks its structure, parses it.
function load(dumpPath, json) {
  if (dumpPath) {
    check(existsSync(dumpPath), `${dumpPath} exists`);
    run(symbolicate, [dumpPath, '-o', json]);
  }
  try {
    run(options['profile-check'], [json]);
    check(true, `profile_check accepts ${json}`);
  } catch (e) {
    check(false, `profile_check accepts ${json}`, e.message);
  }
  return JSON.parse(readFileSync(json, 'utf8'));
}

const strings = (profile) => profile.shared.stringArray;

function threadNamed(profile, name) {
  return profile.threads.find((t) => t.name === name);
}

function sampleTimes(thread) {
  const s = thread.samples;
  if (s.time) return s.time;
  const times = [];
  let t = 0;
  for (const d of s.timeDeltas) times.push((t += d));
  return times;
}

// Function names of a sample's stack, leaf first.
function stackNames(profile, stackIndex) {
  const { stackTable, frameTable, funcTable } = profile.shared;
  const names = [];
  // Version 66: a stack's parent is `prefixOffset` entries before it, 0 meaning none.
  for (let s = stackIndex; s !== null && s !== undefined;) {
    const func = frameTable.func[stackTable.frame[s]];
    names.push(strings(profile)[funcTable.name[func]]);
    const offset = stackTable.prefixOffset[s];
    s = offset === 0 ? null : s - offset;
  }
  return names;
}

function ticks(profile) {
  const t = threadNamed(profile, 'flight-main');
  if (!t) return [];
  const out = [];
  for (let i = 0; i < t.markers.length; ++i) {
    const data = t.markers.data[i];
    if (data && data.type === 'Tick') out.push({ seq: data.seq, time: t.markers.startTime[i] });
  }
  return out.sort((a, b) => a.seq - b.seq);
}

// Loads the profile with profiler-cli; `body(cli, byName)` checks what it shows.
function withCli(json, body) {
  withSession(options.cli, json, 'flight', (cli) => {
    const list = JSON.parse(cli('thread', 'list', '--json'));
    const byName = new Map(list.threads.map((t) => [t.name, t]));
    body(cli, byName);
  }, (e) => check(false, 'profiler-cli stop', e.message));
}

function topDownHas(cli, thread, names) {
  const tree = JSON.parse(cli('thread', 'samples-top-down', '--thread', thread.threadHandle,
                              '--json', '--max-lines', '500')).regularCallTree;
  const has = (node, i) => {
    if (i === names.length) return true;
    for (const c of node.children ?? []) {
      const matches = c.name === names[i] || c.name.startsWith(`${names[i]}(`);
      if (matches ? has(c, i + 1) : has(c, i)) return true;
    }
    return false;
  };
  return has(tree, 0);
}

// --- the two captures -------------------------------------------------------------------------
const windowMs = expect.ring_seconds * 1000;
const captures = [1, 2].map((n) => {
  const profile = load(`${dump}-capture-${n}.inprof`, join(dir, `capture-${n}.json`));
  const { profilingStartTime: start, profilingEndTime: end } = profile.meta;
  check(end - start <= windowMs + 1 && end - start >= 0.5 * windowMs,
        `capture ${n} covers ${(end - start).toFixed(1)} ms: the last ${windowMs} ms at most`);
  for (const t of profile.threads) {
    const times = sampleTimes(t);
    const early = times.filter((x) => x < start - 0.001).length;
    check(early === 0, `capture ${n}: thread "${t.name}" has no sample before the window ` +
                       `(${early} of ${times.length})`);
  }
  const busy = threadNamed(profile, 'flight-busy');
  check(busy && sampleTimes(busy).length > 0, `capture ${n}: thread "flight-busy" has samples`);
  const seen = ticks(profile);
  const last = expect[`capture${n}_last_seq`];
  const contiguous = seen.every((t, i) => i === 0 || t.seq === seen[i - 1].seq + 1);
  check(seen.length > 0 && seen[seen.length - 1].seq === last && contiguous,
        `capture ${n}: Tick markers ${seen[0]?.seq}..${seen[seen.length - 1]?.seq} are ` +
        `contiguous and end with the last one recorded before the capture (${last})`);
  check(seen.every((t) => t.time >= start - 0.001),
        `capture ${n}: every Tick marker lies inside the window`);
  withCli(join(dir, `capture-${n}.json`), (cli, byName) => {
    const b = byName.get('flight-busy');
    check(b && topDownHas(cli, b, ['flight_outer', 'flight_inner']),
          `capture ${n}: profiler-cli shows flight_outer -> flight_inner on "flight-busy"`);
    const m = byName.get('flight-main');
    const markers = m && JSON.parse(cli('thread', 'markers', '--thread', m.threadHandle, '--json'));
    const tick = markers?.byType.find((g) => g.markerName === 'Tick');
    check(tick && tick.count === seen.length,
          `capture ${n}: profiler-cli lists ${tick?.count} Tick markers (${seen.length} in the file)`);
  });
  return { profile, seen };
});
check(captures[1].seen.length > 0 && captures[0].seen.length > 0 &&
      captures[1].seen[0].seq > captures[0].seen[captures[0].seen.length - 1].seq,
      'capture 2 holds none of capture 1\'s markers: each holds only its last second');

// --- the capture stop() wrote ------------------------------------------------------------------
const final = load(null, options.profile);
check(final.meta.profilingEndTime - final.meta.profilingStartTime <= windowMs + 1,
      'the stop() capture covers the last second too');

// --- crash captures ----------------------------------------------------------------------------
for (const [how, signal] of [['segv', 'SIGSEGV'], ['abort', 'SIGABRT']]) {
  const json = join(dir, `crash-${how}.json`);
  const profile = load(`${dump}-crash-${how}.inprof`, json);
  const doomed = threadNamed(profile, 'flight-doomed');
  if (!check(doomed, `crash ${how}: thread "flight-doomed" is in the profile`)) continue;
  // The last sample is the one taken where the signal struck (the crash handler hands the
  // registers and stack to the sampler, which unwinds them like any sample): a fault strikes in
  // flight_doomed itself, abort() inside libc, called from flight_doomed.
  const order = sampleTimes(doomed).map((t, i) => [t, i]).sort((a, b) => a[0] - b[0]);
  const crashStack = order.length ? stackNames(profile, doomed.samples.stack[order[order.length - 1][1]]) : [];
  const shown = `stack (leaf first): ${crashStack.join(' <- ')}`;
  if (how === 'segv') {
    check(crashStack[0] === 'flight_doomed' && crashStack.includes('main'),
          `crash ${how}: the last sample has flight_doomed as its leaf, called from main`, shown);
  } else {
    check(crashStack.some((n) => /abort/.test(n)) && crashStack.includes('flight_doomed') &&
          crashStack.includes('main'),
          `crash ${how}: the last sample is in abort, called from flight_doomed, from main`, shown);
  }
  const withDoomed = doomed.samples.stack.filter(
      (s) => stackNames(profile, s).includes('flight_doomed')).length;
  check(withDoomed >= 10, `crash ${how}: ${withDoomed} samples show flight_doomed`);
  let crash = null;
  for (let i = 0; i < doomed.markers.length; ++i) {
    if (doomed.markers.data[i]?.type === 'Crash') crash = doomed.markers.data[i];
  }
  check(crash && crash.signal === signal, `crash ${how}: a Crash marker says ${signal}`,
        JSON.stringify(crash));
  withCli(json, (cli, byName) => {
    const d = byName.get('flight-doomed');
    check(d && topDownHas(cli, d, ['flight_doomed']),
          `crash ${how}: profiler-cli shows flight_doomed on "flight-doomed"`);
    const markers = d && JSON.parse(cli('thread', 'markers', '--thread', d.threadHandle, '--json'));
    check(markers?.byType.some((g) => g.markerName === 'Crash'),
          `crash ${how}: profiler-cli lists the Crash marker`);
  });
}

if (failures.length) {
  console.log(`\n${failures.length} check(s) failed`);
  process.exit(1);
}
console.log('\nall flight recorder checks passed');
