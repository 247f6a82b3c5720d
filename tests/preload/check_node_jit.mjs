// Checks the profile of node running node_jit.js (run_node_test.sh): the JIT-compiled
// inprofHotLoop must be named from node's perf map, in the JIT category, and the Firefox
// Profiler's own call tree of the main thread must show it.
//
//   node check_node_jit.mjs --profile X.json --profile-check PATH --cli PATH/profiler-cli.js
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const e2eDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'e2e');
const { run, withSession } = await import(join(e2eDir, 'profiler_cli.mjs'));

const kFunction = 'inprofHotLoop';
// The script spends ~1.5 s in the loop and a fraction of that starting up; a quarter leaves
// room for a slow start while still catching JIT frames that went missing.
const kMinShare = 0.25;

const { values: options } = parseArgs({
  options: { profile: { type: 'string' }, 'profile-check': { type: 'string' }, cli: { type: 'string' } },
});
if (!options.profile || !options['profile-check'] || !options.cli) {
  console.error('usage: node check_node_jit.mjs --profile X.json --profile-check PATH --cli PATH');
  process.exit(2);
}

const failures = [];
function fail(message) {
  failures.push(message);
  console.log(`FAIL: ${message}`);
}

// (a) Structure.
try {
  run(options['profile-check'], [options.profile]);
  console.log('ok: profile_check found no problems');
} catch (e) {
  fail(`profile_check rejected the profile: ${e.message}`);
}

// (b) The JSON itself: a func with the name, its frames in the JIT category, and the stacks of the
// main thread's samples.
const profile = JSON.parse(readFileSync(options.profile, 'utf8'));
const { stringArray: strings, funcTable, frameTable, stackTable } = profile.shared;
const categories = profile.meta.categories.map((c) => c.name);
const hotFuncs = new Set();
funcTable.name.forEach((s, i) => strings[s].includes(kFunction) && hotFuncs.add(i));
if (hotFuncs.size === 0) {
  fail(`no function named ${kFunction} in the profile`);
} else {
  console.log(`ok: functions: ${[...hotFuncs].map((f) => JSON.stringify(strings[funcTable.name[f]])).join(', ')}`);
}
const hotFrameCategories = new Set();
frameTable.func.forEach((f, i) => hotFuncs.has(f) && hotFrameCategories.add(categories[frameTable.category[i]]));
// Idle: the same frame as the leaf of a sample taken while the thread did not run.
const unexpected = [...hotFrameCategories].filter((c) => c !== 'JIT' && c !== 'Idle');
if (hotFuncs.size && (!hotFrameCategories.has('JIT') || unexpected.length)) {
  fail(`${kFunction} frames are in categories ${[...hotFrameCategories].join(', ')}, not JIT`);
}

function stackNames(stack) {
  const names = [];
  for (let s = stack; s !== null; s = stackTable.prefixOffset[s] ? s - stackTable.prefixOffset[s] : null) {
    names.push(strings[funcTable.name[frameTable.func[stackTable.frame[s]]]]);
  }
  return names;  // leaf first
}
const main = profile.threads.findIndex((t) => t.isMainThread);
if (main < 0) {
  fail('no main thread');
} else {
  const stacks = profile.threads[main].samples.stack;
  const hits = stacks.filter((s) => s !== null && stackNames(s).some((n) => n.includes(kFunction))).length;
  console.log(`main thread: ${hits} of ${stacks.length} samples have ${kFunction}`);
  if (hits < kMinShare * stacks.length) {
    // Show what the stacks do look like: the most common leaf-side ends.
    const counts = new Map();
    for (const s of stacks) {
      const key = s === null ? '(no stack)' : stackNames(s).slice(0, 6).join(' <- ');
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    const common = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 10);
    fail(`only ${hits} of ${stacks.length} main-thread samples have ${kFunction} ` +
         `(need ${100 * kMinShare} %); most common stacks:\n` +
         common.map(([k, n]) => `  ${n}  ${k}`).join('\n'));
  }
}

// (c) The Firefox Profiler's call tree of the main thread.
function findNode(node, path = []) {
  for (const child of node.children ?? []) {
    if (child.name.includes(kFunction)) return { node: child, path: [...path, child.name] };
    const found = findNode(child, [...path, child.name]);
    if (found) return found;
  }
  return null;
}
try {
  withSession(options.cli, options.profile, 'jit', (cli) => {
    const list = JSON.parse(cli('thread', 'list', '--json'));
    const entry = list.threads.find((t) => profile.threads[t.threadIndex]?.isMainThread);
    if (!entry) throw new Error('profiler-cli lists no main thread');
    const out = cli('thread', 'samples-top-down', '--thread', entry.threadHandle, '--json',
                    '--max-lines', '500');
    const tree = JSON.parse(out).regularCallTree;
    const found = findNode(tree);
    if (!found || found.node.totalSamples === 0) {
      fail(`${kFunction} is not in the call tree of the main thread (${entry.threadHandle})`);
    } else {
      console.log(`ok: profiler-cli call tree of "${entry.name}" (${entry.threadHandle}): ` +
                  `${found.path.join(' -> ')}: ${found.node.totalSamples} of ${tree.totalSamples} samples`);
    }
  }, (e) => fail(`profiler-cli stop: ${e.message}`));
} catch (e) {
  fail(`profiler-cli: ${e.message}`);
}

if (failures.length > 0) {
  console.log(`check_node_jit: ${failures.length} check(s) failed`);
  process.exit(1);
}
console.log('check_node_jit: all checks passed');
