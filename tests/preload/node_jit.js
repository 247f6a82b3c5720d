// CPU-bound JavaScript for the preload_node_jit test: inprofHotLoop runs for about 1.5 s, called
// in short chunks so V8 compiles it and the samples land in its JIT code.
'use strict';

function inprofHotLoop(n) {
  let x = 0;
  for (let i = 0; i < n; ++i) {
    x = (x * 31 + i) % 1000003;
  }
  return x;
}

const deadline = Date.now() + 1500;
let total = 0;
while (Date.now() < deadline) total += inprofHotLoop(200000);
console.log(`inprofHotLoop: ${total}`);
