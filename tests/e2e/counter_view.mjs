// Whether a counter track shows the counter's real values in the Firefox Profiler (issue 22,
// item 7). The viewer adds up samples.count and draws that running total less its lowest point
// ("line-accumulated"), so its "accumulated" tooltip source is off as soon as the counter goes
// below zero; only samples.number ("sample-number") can carry the value itself.
import { kGraphColors } from './marker_view.mjs';

// Problems with one entry of profile.counters, one line each (empty: all is well).
export function counterProblems(counter) {
  const problems = [];
  const { display, samples } = counter;
  if (display.graphType !== 'line-accumulated') {
    problems.push(`graph type ${display.graphType}: a level is drawn as a running total`);
  }
  if (!kGraphColors.has(display.color)) problems.push(`colour ${display.color} cannot be drawn`);
  const rows = display.tooltipRows.filter((r) => r.type === 'value');
  if (rows[0]?.source !== 'sample-number') {
    problems.push(`the tooltip's first row reads ${rows[0]?.source}, not the value`);
  }
  if (rows.some((r) => r.source === 'accumulated')) {
    problems.push('a tooltip row shows the running total less its minimum');
  }
  if (!Array.isArray(samples.number) || samples.number.length !== samples.length) {
    problems.push('no samples.number column with the values');
    return problems;
  }
  let total = 0;
  for (let i = 0; i < samples.length; ++i) {
    total += samples.count[i];
    if (total !== samples.number[i]) {
      problems.push(`sample ${i}: the counts add up to ${total}, the value is ${samples.number[i]}`);
      break;
    }
  }
  return problems;
}
