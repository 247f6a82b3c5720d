// Checks what a person sees first when a profile opens in the Firefox Profiler, on any profile
// symbolicate wrote (the examples'): no code drawn grey as "Other", no thread of the profiler's
// own, every thread with samples or markers visible and one selected, the main thread named
// after the process, Profile Info filled, markers coloured by category with their fields, and
// counters showing their real values. Reads the JSON only (no profiler-cli needed).
//
//   node check_view.mjs --profile X.json
//
// Exit status 0 when every check passes, 1 otherwise (with a diagnostic), 2 on bad usage.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { wronglyOtherCallNodes } from './call_node_categories.mjs';
import { counterProblems } from './counter_view.mjs';
import { markerProblems } from './marker_view.mjs';

let options;
try {
  ({ values: options } = parseArgs({ options: { profile: { type: 'string' } } }));
} catch (e) {
  console.error(`check_view: ${e.message}`);
  process.exit(2);
}
if (!options.profile) {
  console.error('usage: node check_view.mjs --profile X.json');
  process.exit(2);
}

let failures = 0;
function check(condition, message, diagnostic = '') {
  console.log(`${condition ? 'ok' : 'FAIL'}: ${message}`);
  if (!condition) {
    ++failures;
    if (diagnostic) console.log(diagnostic);
  }
}

let profile;
try {
  profile = JSON.parse(readFileSync(options.profile, 'utf8'));
} catch (e) {
  console.error(`check_view: cannot read ${options.profile}: ${e.message}`);
  process.exit(1);
}
const { meta, threads } = profile;

for (const thread of threads) {
  const wrong = wronglyOtherCallNodes(profile, thread);
  check(wrong.length === 0, `thread "${thread.name}": no code call node is "Other"`,
        wrong.slice(0, 5).map((n) => `  ${n.path}${n.mixed ? ' (mixed)' : ''}`).join('\n'));
}
const own = threads.filter((t) => /^inprof-(stopper|capture)$/.test(t.name) ||
                                  (t.name.startsWith('inprof-') && t.samples.length === 0));
check(own.length === 0, `no thread of the profiler's own (${own.map((t) => t.name).join(', ')})`);
const main = threads.find((t) => t.isMainThread);
check(main && main.name === meta.product,
      `the main thread is named after the process (${main?.name}, ${meta.product})`);
const wanted = threads.flatMap((t, i) => (t.samples.length > 0 || t.markers.length > 0 ? [i] : []));
check(JSON.stringify(meta.initialVisibleThreads) === JSON.stringify(wanted),
      `every thread with samples or markers is visible at first ` +
      `(${JSON.stringify(meta.initialVisibleThreads)}, want ${JSON.stringify(wanted)})`);
check(meta.initialSelectedThreads?.length === 1 &&
      wanted.includes(meta.initialSelectedThreads[0]),
      `one visible thread is selected (${JSON.stringify(meta.initialSelectedThreads)})`);
check(/^(Linux|Windows) \S+ \S+$/.test(meta.oscpu ?? ''), `OS, release, architecture (${meta.oscpu})`);
check(meta.logicalCPUs >= 1 && meta.mainMemory > 0,
      `CPU count and memory (${meta.logicalCPUs}, ${meta.mainMemory})`);
check(typeof meta.arguments === 'string' && meta.arguments.length > 0,
      `the command line (${meta.arguments})`);

// Markers and counters (issue 22, items 6 and 7).
for (const thread of threads) {
  const wrong = markerProblems(profile, thread);
  check(wrong.length === 0,
        `thread "${thread.name}": every marker shows its category, colour and thread`,
        wrong.slice(0, 5).map((p) => `  ${p}`).join('\n'));
}
for (const counter of profile.counters ?? []) {
  const wrong = counterProblems(counter);
  check(wrong.length === 0, `counter "${counter.name}" shows its real values`,
        wrong.slice(0, 5).map((p) => `  ${p}`).join('\n'));
}

if (failures > 0) {
  console.log(`check_view: ${failures} check(s) failed`);
  process.exit(1);
}
console.log('check_view: all checks passed');
