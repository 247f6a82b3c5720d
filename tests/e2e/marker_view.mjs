// Whether a thread's markers show as a person needs them in the Firefox Profiler (issue 22, item
// 6): the viewer draws fields, tooltips rows and timeline entries only for markers with a payload
// whose schema lists them, and colours a marker in the marker chart only through the schema's
// colorField (a payload key holding a graph colour); otherwise every marker is the same blue.

// The viewer's graph colours (GraphColor in its src/types/profile.ts).
export const kGraphColors = new Set(['blue', 'green', 'grey', 'ink', 'magenta', 'orange', 'purple',
                                     'red', 'teal', 'yellow']);

// Problems with the markers of `thread`, one line each (empty: all is well).
export function markerProblems(profile, thread) {
  const problems = [];
  const { markers } = thread;
  if (markers.length === 0) return problems;
  if (thread.showMarkersInTimeline !== true) problems.push('showMarkersInTimeline is not set');
  const schemas = new Map(profile.meta.markerSchema.map((s) => [s.name, s]));
  const strings = profile.shared.stringArray;
  for (let i = 0; i < markers.length; ++i) {
    const name = strings[markers.name[i]];
    const category = profile.meta.categories[markers.category[i]];
    const data = markers.data[i];
    const say = (what) => problems.push(`"${name}" (${category.name}): ${what}`);
    const schema = data && schemas.get(data.type);
    if (!schema) {
      say(data ? `no schema "${data.type}"` : 'no payload: no fields, no colour, not in the timeline');
      continue;
    }
    for (const where of ['marker-chart', 'marker-table', 'timeline-overview']) {
      if (!schema.display.includes(where)) say(`schema "${schema.name}" is not shown in ${where}`);
    }
    const color = schema.colorField && data[schema.colorField];
    if (!kGraphColors.has(color)) {
      say(`drawn in the default blue (colorField ${schema.colorField}, value ${color})`);
    } else if (kGraphColors.has(category.color) && color !== category.color) {
      say(`drawn ${color}, its category is ${category.color}`);
    }
    const shown = schema.fields.filter((f) => !f.hidden);
    if (!shown.some((f) => f.format === 'string' && data[f.key] === category.name)) {
      say('no field shows its category');
    }
    if (!shown.some((f) => f.format === 'tid' && data[f.key] === thread.tid)) {
      say('no field shows its thread');
    }
  }
  return problems;
}
