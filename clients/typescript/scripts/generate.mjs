// Generates the TypeScript client's derived files from their sources:
//   src/schema.d.ts   the types of every schema and route in clients/openapi.json
//                     (openapi-typescript, pinned in package.json)
//   src/*.d.ts        the declarations of src/index.js and src/agents.js, written by tsc from
//                     their JSDoc (which tsc checks against schema.d.ts)
// `node scripts/generate.mjs` writes them; test/generated.test.mjs calls the same functions
// and fails when a committed file differs (scripts/generate-clients.sh runs this).
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const root = join(here, "..");
export const spec = join(root, "..", "openapi.json");
/** The files tsc writes declarations for. */
export const sources = ["index.js", "agents.js"];

const HEADER = "// The types of recall's HTTP API, generated from clients/openapi.json by\n// clients/typescript/scripts/generate.mjs: do not edit.\n\n";

/** The text of src/schema.d.ts for the spec. */
export async function schemaSource() {
  const { default: openapiTS, astToString } = await import("openapi-typescript");
  const ast = await openapiTS(pathToFileURL(spec));
  return HEADER + astToString(ast);
}

/** The declarations tsc writes for `sources`, by file name (src/schema.d.ts must be current). */
export function declarations() {
  const out = mkdtempSync(join(tmpdir(), "recall-dts-"));
  try {
    const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
    execFileSync(process.execPath, [tsc, "-p", join(root, "tsconfig.build.json"), "--outDir", out], { stdio: ["ignore", "inherit", "inherit"] });
    /** @type {Record<string, string>} */
    const files = {};
    for (const f of readdirSync(out)) files[f] = readFileSync(join(out, f), "utf8");
    return files;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(join(root, "src", "schema.d.ts"), await schemaSource());
  for (const [name, text] of Object.entries(declarations())) writeFileSync(join(root, "src", name), text);
  console.log("wrote src/schema.d.ts and the declarations of", sources.join(", "));
}
