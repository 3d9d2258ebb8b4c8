// recall web app: The calls that go up the page's layers. Modules import downward only
// (state, dom, api, then the lists, dialogs, composer, chat and the shell on top); where a
// lower one must reach a higher one (navigate, re-render a chat, sign out), it calls
// `hooks.NAME`, which the higher module provided when it loaded. A name called before it is
// provided throws an error that names it.

const provided = new Map();

export const hooks = new Proxy(
  {},
  {
    get(_, name) {
      const fn = provided.get(name);
      if (!fn) throw new Error(`web app: hook ${String(name)} was not provided`);
      return fn;
    },
  },
);

// Called by a module at load with the functions it offers to the modules below it.
export function provide(fns) {
  for (const [name, fn] of Object.entries(fns)) provided.set(name, fn);
}
