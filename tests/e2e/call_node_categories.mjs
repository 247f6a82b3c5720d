// The category the Firefox Profiler gives each call node, derived from a processed profile as its
// front end does (computeStackTableFromRawStackTable, then the call node table): a stack takes
// its frame's category, or its prefix's when the frame has none; a call node (a path of
// functions) whose stacks disagree is drawn in the default (grey, "Other") category. profiler-cli
// does not report call-node categories, so the checks compute them here.

// Calls visit(path, categoryName, frameIndex) for every call node that a sample of `thread`
// reaches, once per node, with the category the viewer shows for it.
export function callNodeCategories(profile, thread) {
  const { stackTable, frameTable, funcTable, stringArray } = profile.shared;
  const categories = profile.meta.categories;
  const defaultCategory = categories.findIndex((c) => c.color === 'grey');
  const stackCategory = new Array(stackTable.length);
  const stackPath = new Array(stackTable.length);
  for (let i = 0; i < stackTable.length; ++i) {
    const offset = stackTable.prefixOffset[i];
    const prefix = offset === 0 ? -1 : i - offset;
    const frame = stackTable.frame[i];
    const own = frameTable.category[frame];
    stackCategory[i] = own ?? (prefix >= 0 ? stackCategory[prefix] : defaultCategory);
    const name = stringArray[funcTable.name[frameTable.func[frame]]];
    stackPath[i] = (prefix >= 0 ? `${stackPath[prefix]} -> ` : '') + name;
  }
  const nodes = new Map();  // path -> { category, frame }
  const seen = new Set();
  for (const stack of thread.samples.stack) {
    for (let s = stack; s !== null && s >= 0 && !seen.has(s);) {
      seen.add(s);
      const path = stackPath[s];
      const node = nodes.get(path);
      if (!node) {
        nodes.set(path, { category: stackCategory[s], frame: stackTable.frame[s] });
      } else if (node.category !== stackCategory[s]) {
        node.category = defaultCategory;
        node.mixed = true;
      }
      const offset = stackTable.prefixOffset[s];
      s = offset === 0 ? -1 : s - offset;
    }
  }
  return [...nodes].map(([path, n]) => ({
    path,
    category: categories[n.category].name,
    mixed: n.mixed === true,
    // Code (an address in a library, or one in no module) rather than a label or marker frame.
    isCode: frameTable.address[n.frame] >= 0 || /^0x[0-9a-f]+$/.test(stringArray[funcTable.name[frameTable.func[n.frame]]]),
  }));
}

// The call nodes of `thread` drawn as "Other" although they are code, or because their samples
// disagree: what a person must not see.
export function wronglyOtherCallNodes(profile, thread) {
  return callNodeCategories(profile, thread).filter(
      (n) => n.category === 'Other' && (n.mixed || n.isCode));
}
