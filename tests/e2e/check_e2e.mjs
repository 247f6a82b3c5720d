// Checks the profile of e2e_target (see e2e_target.cc) with the checker and with the Firefox
// Profiler's own loading and call-tree code (@firefox-devtools/profiler-cli).
//
//   node check_e2e.mjs --profile X.json --profile-check PATH --cli PATH/profiler-cli.js
//
// Exit status 0 when every check passes, 1 otherwise (with a diagnostic), 2 on bad usage.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { run, withSession } from './profiler_cli.mjs';

// A chain must hold in at least this share of its thread's samples. The rest is thread start-up
// and shutdown and samples taken in frame-pointer-less code (clock reads, libc).
const kMinShare = 0.8;

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
  console.error(`check_e2e: ${e.message}`);
  process.exit(2);
}
if (!options.profile || !options['profile-check'] || !options.cli) {
  console.error('usage: node check_e2e.mjs --profile X.json --profile-check PATH --cli PATH');
  process.exit(2);
}

const failures = [];
function fail(message, diagnostic = '') {
  failures.push(message);
  console.log(`FAIL: ${message}`);
  if (diagnostic) console.log(diagnostic);
}

// A call-tree node's function, ignoring the parameter list that demangled C++ names carry.
function isFunction(node, name) {
  return node.name === name || node.name.startsWith(`${name}(`);
}

// Samples whose stack holds `chain` as consecutive caller -> callee frames. Below a node that
// starts a counted chain the search stops, so a sample is never counted twice.
function chainSamples(node, chain) {
  let total = 0;
  for (const child of node.children ?? []) {
    const here = isFunction(child, chain[0]) ? chainFrom(child, chain, 1) : 0;
    total += here > 0 ? here : chainSamples(child, chain);
  }
  return total;
}
function chainFrom(node, chain, next) {
  if (next === chain.length) return node.totalSamples;
  let total = 0;
  for (const child of node.children ?? []) {
    if (isFunction(child, chain[next])) total += chainFrom(child, chain, next + 1);
  }
  return total;
}

// The busiest part of a call tree as indented text, for failure messages.
function renderTree(root, maxNodes = 60) {
  const lines = [];
  const walk = (node, depth) => {
    if (lines.length >= maxNodes) return;
    const truncated = node.childrenTruncated ? ` [${node.childrenTruncated.count} children cut]` : '';
    lines.push(`${'  '.repeat(depth)}${node.nameWithLibrary ?? node.name}  ` +
               `total ${node.totalSamples}, self ${node.selfSamples}${truncated}`);
    const children = [...(node.children ?? [])].sort((a, b) => b.totalSamples - a.totalSamples);
    for (const child of children) walk(child, depth + 1);
  };
  walk(root, 1);
  if (lines.length >= maxNodes) lines.push('  ...');
  return lines.join('\n');
}

function expectChain(thread, chain) {
  const root = thread.tree;
  const shown = chain.join(' -> ');
  const total = root.totalSamples;
  const covered = chainSamples(root, chain);
  const label = `thread "${thread.name}" (${thread.handle})`;
  if (total === 0) {
    fail(`${label} has no samples`);
  } else if (covered < kMinShare * total) {
    fail(`${label}: ${shown} covers ${covered} of ${total} samples ` +
         `(${(100 * covered / total).toFixed(1)} %, need ${100 * kMinShare} %)`,
         `call tree of ${label}:\n${renderTree(root)}`);
  } else {
    console.log(`ok: ${label}: ${shown} covers ${covered} of ${total} samples`);
  }
}

function findNamed(threads, name) {
  const found = threads.filter((t) => t.name === name);
  if (found.length !== 1) {
    fail(`expected one thread named "${name}", found ${found.length}`,
         `threads: ${threads.map((t) => `"${t.name}"`).join(', ')}`);
    return null;
  }
  return found[0];
}

// Whether `caller` directly calls `callee` somewhere in the tree, in at least one sample.
function hasCall(node, caller, callee) {
  for (const child of node.children ?? []) {
    if (isFunction(child, caller) &&
        (child.children ?? []).some((c) => isFunction(c, callee) && c.totalSamples > 0)) {
      return true;
    }
    if (hasCall(child, caller, callee)) return true;
  }
  return false;
}

function checkMainThread(threads) {
  let main = threads.filter((t) => t.isMainThread);
  if (main.length === 0) {
    // Accepted, but a symbolicate that forgets the flag should be noticed.
    console.log('note: no thread has isMainThread; looking for the thread that runs main');
    main = threads.filter((t) => chainSamples(t.tree, ['main']) > 0);
  }
  if (main.length !== 1) {
    fail(`expected one main thread, found ${main.length}`,
         `threads: ${threads.map((t) => `"${t.name}"`).join(', ')}`);
    return;
  }
  const thread = main[0];
  const label = `main thread "${thread.name}" (${thread.handle})`;
  if (hasCall(thread.tree, 'main', 'main_work')) {
    console.log(`ok: ${label} has main -> main_work`);
  } else {
    fail(`${label} has no main -> main_work`, `call tree of ${label}:\n${renderTree(thread.tree)}`);
  }
}

// (a) Structure.
try {
  const out = run(options['profile-check'], [options.profile]);
  console.log(`ok: profile_check found no problems${out ? `\n${out}` : ''}`);
} catch (e) {
  fail(`profile_check rejected the profile: ${e.message}`);
}

// (b) The profiler's own code: load, list threads, one call tree per thread; always stop.
const profile = JSON.parse(readFileSync(options.profile, 'utf8'));
const threads = [];
try {
  withSession(options.cli, options.profile, 'e2e', (cli) => {
    const list = JSON.parse(cli('thread', 'list', '--json'));
    for (const entry of list.threads) {
      // threadIndex is the index into the profile's threads; the name check guards that reading.
      const original = profile.threads[entry.threadIndex];
      if (!original || original.name !== entry.name) {
        throw new Error(`thread list entry ${entry.threadHandle} ("${entry.name}") does not ` +
                        `match threads[${entry.threadIndex}] of the profile`);
      }
      const out = cli('thread', 'samples-top-down', '--thread', entry.threadHandle,
                      '--include-idle', '--json', '--max-lines', '500');
      threads.push({
        handle: entry.threadHandle,
        name: entry.name,
        isMainThread: original.isMainThread === true,
        tree: JSON.parse(out).regularCallTree,
      });
    }
  }, (e) => fail(`profiler-cli stop: ${e.message}`));
  if (threads.length !== profile.threads.length) {
    throw new Error(`profiler-cli lists ${threads.length} threads, the profile has ` +
                    `${profile.threads.length}`);
  }
  console.log(`ok: profiler-cli loaded the profile: ${threads.length} threads ` +
              `(${threads.map((t) => `"${t.name}"`).join(', ')})`);
} catch (e) {
  fail(`profiler-cli: ${e.message}`);
}

// (c) The known call chains of e2e_target.
if (threads.length > 0) {
  const busy = findNamed(threads, 'busy');
  if (busy) expectChain(busy, ['busy_outer', 'busy_middle', 'busy_inner']);
  const sleeper = findNamed(threads, 'sleeper');
  if (sleeper && process.env.INPROF_E2E_EMULATED) {
    console.log('skip: sleeper chain under qemu-user: a sleeping thread is read through ' +
                '/proc/self/task/TID/syscall and process_vm_readv, which the emulator does not offer');
  } else if (sleeper) {
    expectChain(sleeper, ['sleeper_outer', 'sleeper_wait']);
  }
  checkMainThread(threads);
}

if (failures.length > 0) {
  console.log(`check_e2e: ${failures.length} check(s) failed`);
  process.exit(1);
}
console.log('check_e2e: all checks passed');
