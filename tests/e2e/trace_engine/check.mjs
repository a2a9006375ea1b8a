// Parse a Chrome trace-event file with Chrome DevTools' own trace engine (the Performance
// panel's model) and print what it built: processes, threads, and each thread's slices
// (entries) and the roots of their nesting tree.
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const engine = path.join(process.argv[3], 'node_modules/@paulirish/trace_engine/models/trace/trace.js');
const Trace = await import(pathToFileURL(engine).href);
// The engine reads DOMRect, which Node lacks.
globalThis.DOMRect = class {
  constructor(x = 0, y = 0, w = 0, h = 0) { this.x = x; this.y = y; this.width = w; this.height = h; }
};
// And URL.parse (WHATWG: a URL, or null where the constructor throws), which Node has from
// 20.18 and Debian 12's Node 18 lacks.
URL.parse ??= (url, base) => {
  try { return new URL(url, base); } catch { return null; }
};
const events = JSON.parse(fs.readFileSync(process.argv[2], 'utf8')).traceEvents;
const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(events);
const renderer = model.parsedTrace().data.Renderer;
const out = {processes: {}};
for (const [pid, p] of renderer.processes) {
  const threads = {};
  for (const [tid, t] of p.threads)
    threads[tid] = {entries: t.entries.length, roots: t.tree ? t.tree.roots.size : 0,
                    names: t.entries.map(e => e.name)};
  out.processes[pid] = threads;
}
console.log(JSON.stringify(out));
