// Checks known_sites' allocation profile (run_allocations_test.sh) with the Firefox Profiler's
// own code: profiler-cli's "native-allocations" and "native-retained-allocations" call-tree
// strategies, inverted (the roots are the allocating functions), against known_sites' truth.
//
//   INPROF_KNOWN_SITES_TRUTH=FILE INPROF_EXACT=1|0 \
//     node check_allocations.mjs --profile X.json --profile-check PATH --cli PATH/profiler-cli.js
// EXACT=1 (every allocation recorded): each site's bytes exactly; else shares within
// max(3 percentage points, 4 sigma). Either way site_leak is the top retained site.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const e2eDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'e2e');
const { run, withSession } = await import(join(e2eDir, 'profiler_cli.mjs'));

const { values: options } = parseArgs({
  options: { profile: { type: 'string' }, 'profile-check': { type: 'string' }, cli: { type: 'string' } },
});
const truthFile = process.env.INPROF_KNOWN_SITES_TRUTH;
if (!options.profile || !options['profile-check'] || !options.cli || !truthFile) {
  console.error('usage: INPROF_KNOWN_SITES_TRUTH=FILE node check_allocations.mjs --profile X.json ' +
                '--profile-check PATH --cli PATH');
  process.exit(2);
}
const exact = process.env.INPROF_EXACT === '1';

// known_sites' lines: site=NAME key=value ...
const truth = {};
for (const line of readFileSync(truthFile, 'utf8').split('\n')) {
  const fields = Object.fromEntries(line.split(' ').filter((f) => f.includes('=')).map((f) => f.split('=')));
  if (fields.site) truth[fields.site] = fields;
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

// The roots of an inverted call tree as {name: bytes}. The JSON's nodes carry the function's
// name and their total (in bytes for these strategies).
function roots(json) {
  const tree = json.regularCallTree ?? json.invertedCallTree ?? json.callTree ?? json;
  const children = tree.children ?? tree.roots ?? [];
  const out = {};
  for (const node of children) {
    const name = node.name ?? node.funcName ?? '';
    out[name] = (out[name] ?? 0) + Number(node.totalSamples ?? node.total ?? 0);
  }
  return out;
}
function bytesOf(rootsByName, site) {
  let sum = 0;
  for (const [name, bytes] of Object.entries(rootsByName)) if (name.includes(`${site}(`)) sum += bytes;
  return sum;
}

try {
  withSession(options.cli, options.profile, 'alloc', (cli) => {
    const strategy = (name) =>
      JSON.parse(cli('thread', 'samples-bottom-up', '--thread', 't-0', '--strategy', name,
                     '--json', '--max-lines', '2000'));
    const allocated = roots(strategy('native-allocations'));
    const sites = ['site_sixty', 'site_thirty', 'site_ten', 'site_leak'];
    const total = sites.reduce((sum, s) => sum + bytesOf(allocated, s), 0);
    if (total === 0) fail(`no allocation site found; roots: ${Object.keys(allocated).slice(0, 10).join(', ')}`);
    for (const site of sites) {
      const got = bytesOf(allocated, site);
      const want = Number(truth[site]?.bytes);
      if (exact) {
        if (got !== want) fail(`${site}: ${got} bytes, truth ${want}`);
        else console.log(`ok: ${site} ${got} bytes (exact)`);
      } else if (site !== 'site_leak') {
        const share = got / total;
        const error = Math.abs(share - Number(truth[site].share)) * 100;
        const tolerance = Math.max(3, 4 * Number(truth[site].sigma_pp));
        const line = `${site}: share ${share.toFixed(4)}, truth ${truth[site].share}, error ${error.toFixed(2)} pp`;
        if (!(error <= tolerance)) fail(`${line} > ${tolerance.toFixed(2)}`);
        else console.log(`ok: ${line}`);
      }
    }
    const retained = roots(strategy('native-retained-allocations'));
    const top = Object.entries(retained).sort((a, b) => b[1] - a[1])[0];
    if (!top || !top[0].includes('site_leak(')) fail(`top retained site: ${top && top[0]}`);
    else console.log(`ok: top retained site ${top[0]} (${top[1]} bytes)`);
    if (exact && bytesOf(retained, 'site_leak') !== Number(truth.site_leak.retained)) {
      fail(`site_leak retained ${bytesOf(retained, 'site_leak')}, truth ${truth.site_leak.retained}`);
    }
  }, (e) => fail(`profiler-cli stop: ${e.message}`));
} catch (e) {
  fail(`profiler-cli: ${e.message}`);
}

if (failures.length > 0) {
  console.log(`check_allocations: ${failures.length} check(s) failed`);
  process.exit(1);
}
console.log('check_allocations: all checks passed');
