/**
 * Loads `dt-sql-parser`'s FlinkSQL grammar (`npm:dt-sql-parser@4.5.1`, an
 * ANTLR 4 grammar of Flink SQL on the `antlr4ng` runtime) synchronously, from
 * a bundle built into a cache at first use.
 *
 * ## Why a bundle, and why synchronous
 *
 * The package's ESM build uses directory imports, which Deno refuses, so it
 * cannot be imported; `deno bundle` of an entry that re-exports `FlinkSQL`
 * (`dt_sql_parser_entry.ts`) gives one self-contained file that runs. The
 * bundle is third-party code, so it is never committed: it is built on the
 * first parse and kept in the cache. SQL parsing is synchronous in Weir's
 * API (Flink's `sqlQuery` returns a `Table`), so the bundle is built with
 * `Deno.Command.outputSync` and loaded as a CommonJS module body through
 * `new Function` instead of a dynamic `import()`. Nothing is loaded until
 * the first SQL statement is parsed, so jobs that use no SQL need no extra
 * permission.
 *
 * ## The cache
 *
 * `<dir>/dt-sql-parser-4.5.1/flinksql-cjs-v1.js`, where `<dir>` is
 * `$WEIR_CACHE_DIR`, else `$XDG_CACHE_HOME/weir`, else `$HOME/.cache/weir`
 * (`%LOCALAPPDATA%\weir` on Windows). The bundle is written to a private
 * temporary directory beside it and renamed into place, so processes that
 * race on a clean machine each see either no file or a whole one (the last
 * rename wins; the bundles are identical). Building runs `deno bundle` with
 * `Deno.execPath()` and needs the npm package in Deno's cache or the npm
 * registry reachable; it takes about 1.5 s on an idle machine (18 s was
 * measured on a loaded one). Loading the cached bundle takes about 70 ms.
 *
 * Permissions: reading the environment variables above, reading and writing
 * the cache directory, and (only to build) running `Deno.execPath()`.
 *
 * @module
 */

import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The npm package and version the grammar comes from. */
export const DT_SQL_PARSER_PACKAGE = "dt-sql-parser@4.5.1";

const BUNDLE_FILE = "flinksql-cjs-v1.js";
const ENTRY_SOURCE = `export { FlinkSQL } from "npm:${DT_SQL_PARSER_PACKAGE}";\n`;

/** A token of the ANTLR runtime (`antlr4ng`'s `Token`), as far as Weir reads it. */
export interface AntlrToken {
  /** The token type (an index of the vocabulary; -1 is end of input). */
  readonly type: number;
  /** The token's text (`<EOF>` at end of input). */
  readonly text: string | undefined;
  /** 0-based offset of its first character in the parsed text. */
  readonly start: number;
  /** 0-based offset of its last character in the parsed text. */
  readonly stop: number;
  /** 0 for the default channel; comments and white space are on another. */
  readonly channel: number;
}

/**
 * A node of an ANTLR parse tree (`antlr4ng`'s `ParserRuleContext` or
 * `TerminalNode`), as far as Weir reads it: a rule node has `ruleIndex` and
 * `children`, a terminal (or error) node has `symbol`.
 */
export interface AntlrTree {
  /** The rule (an index of `AntlrParser.ruleNames`), on rule nodes. */
  readonly ruleIndex?: number;
  /** The children, on rule nodes (may be empty or missing for an empty match). */
  readonly children?: readonly AntlrTree[] | null;
  /** The token, on terminal nodes. */
  readonly symbol?: AntlrToken;
  /** The first token, on rule nodes. */
  readonly start?: AntlrToken | null;
}

/** An ANTLR vocabulary: token types to names. */
export interface AntlrVocabulary {
  /** The grammar's name of a token type, e.g. `KW_SELECT`, or `null`. */
  getSymbolicName(type: number): string | null;
  /** How a token type is shown in messages, e.g. `'SELECT'`. */
  getDisplayName(type: number): string;
}

/** The set of token types the parser expected (`antlr4ng`'s `IntervalSet`). */
export interface AntlrTokenSet {
  /** The token types, ascending. */
  toArray(): number[];
}

/** The parser's view passed to an error listener (`antlr4ng`'s `Parser`). */
export interface AntlrRecognizer {
  /** The vocabulary, for the names of expected tokens. */
  readonly vocabulary: AntlrVocabulary;
  /** The token types that would have been accepted where the error is (parsers only). */
  getExpectedTokens?(): AntlrTokenSet;
}

/** An ANTLR error listener (`antlr4ng`'s `ANTLRErrorListener`). */
export interface AntlrErrorListener {
  /** Called for each syntax error; `offendingSymbol` is `null` for lexer errors. */
  syntaxError(
    recognizer: AntlrRecognizer,
    offendingSymbol: AntlrToken | null,
    line: number,
    charPositionInLine: number,
    msg: string,
    e: unknown,
  ): void;
  /** Ambiguity reports (ignored). */
  reportAmbiguity(): void;
  /** Full-context reports (ignored). */
  reportAttemptingFullContext(): void;
  /** Context-sensitivity reports (ignored). */
  reportContextSensitivity(): void;
}

/** The generated FlinkSQL parser (`FlinkSqlParser`), as far as Weir uses it. */
export interface AntlrParser extends AntlrRecognizer {
  /** The grammar's rule names, by rule index. */
  readonly ruleNames: readonly string[];
  /** The ATN simulator; `predictionMode` 0 is SLL, 1 is LL. */
  readonly interpreter: { predictionMode: number };
  /** Whether a parse tree is built (must be `true`). */
  buildParseTrees: boolean;
  /** Removes the default (console) error listeners. */
  removeErrorListeners(): void;
  /** Adds a listener of syntax errors. */
  addErrorListener(listener: AntlrErrorListener): void;
  /** Parses a whole script (the grammar's start rule). */
  program(): AntlrTree;
}

/** An ANTLR lexer, as far as Weir uses it. */
export interface AntlrLexer {
  /** The vocabulary of token types. */
  readonly vocabulary: AntlrVocabulary;
  /** Removes the default (console) error listeners. */
  removeErrorListeners(): void;
  /** Adds a listener of lexical errors. */
  addErrorListener(listener: AntlrErrorListener): void;
  /** All tokens of the input, on every channel, without the end of input. */
  getAllTokens(): AntlrToken[];
}

/**
 * `dt-sql-parser`'s `FlinkSQL` class, as far as Weir uses it: it makes a
 * lexer or a parser over a text (the parser's tokens are already lexed, so
 * lexical errors go to `FlinkSQL`'s own listener; see `createParser`).
 */
export interface FlinkSqlApi {
  /** A lexer over `input`. */
  createLexer(input: string): AntlrLexer;
  /**
   * A parser over `input`, its tokens lexed; `onLexError` receives lexical
   * errors (`originalError` has ANTLR's message and position).
   */
  createParser(
    input: string,
    onLexError: (
      parseError: { readonly startLine: number; readonly startColumn: number },
      originalError: {
        readonly msg: string;
        readonly line: number;
        readonly charPositionInLine: number;
      },
    ) => void,
  ): AntlrParser;
}

/**
 * Where the bundle is cached: the directory named in the module docs.
 * @param getEnv reads an environment variable (default `Deno.env.get`;
 *   empty values count as unset).
 * @throws {Error} when no cache directory can be derived (no `HOME`, no
 *   `WEIR_CACHE_DIR`), or reading the environment is not permitted.
 */
export function bundleCacheDir(
  getEnv: (name: string) => string | undefined = (name) => Deno.env.get(name),
): string {
  const env = (name: string): string | undefined => {
    try {
      return getEnv(name) || undefined;
    } catch (error) {
      throw new Error(
        `the SQL parser's cache directory cannot be found: reading ${name} failed (${
          String(error)
        }); ` +
          `(run with --allow-env, or set WEIR_CACHE_DIR and allow it)`,
        { cause: error },
      );
    }
  };
  const base = env("WEIR_CACHE_DIR") ??
    ((xdg) => xdg === undefined ? undefined : join(xdg, "weir"))(env("XDG_CACHE_HOME")) ??
    ((home) => home === undefined ? undefined : join(home, ".cache", "weir"))(env("HOME")) ??
    ((local) => local === undefined ? undefined : join(local, "weir"))(env("LOCALAPPDATA"));
  if (base === undefined) {
    throw new Error(
      "the SQL parser's cache directory cannot be found: set WEIR_CACHE_DIR (or HOME, or XDG_CACHE_HOME)",
    );
  }
  return join(base, DT_SQL_PARSER_PACKAGE.replace("@", "-"));
}

let loaded: FlinkSqlApi | undefined;

/**
 * The FlinkSQL grammar, built into the cache and loaded on the first call
 * (later calls return the same instance).
 * @throws {Error} when the bundle cannot be built (the message names the
 *   command, its exit code and its output) or the cache cannot be read or
 *   written (naming the path).
 */
export function loadFlinkSql(): FlinkSqlApi {
  if (loaded !== undefined) return loaded;
  const dir = bundleCacheDir();
  const file = join(dir, BUNDLE_FILE);
  let code: string | undefined;
  try {
    code = Deno.readTextFileSync(file);
  } catch {
    // Missing (or unreadable): build it; building names the directory if it cannot.
  }
  if (code === undefined) code = buildBundle(dir, file);
  let api: FlinkSqlApi;
  try {
    api = evaluate(code, file);
  } catch {
    // A bundle from an interrupted older build or a damaged disk: build again once.
    api = evaluate(buildBundle(dir, file), file);
  }
  loaded = api;
  return api;
}

function evaluate(code: string, file: string): FlinkSqlApi {
  const module = { exports: {} as Record<string, unknown> };
  const require = (name: string): never => {
    throw new Error(`the SQL parser's bundle ${file} requires '${name}', which is not bundled`);
  };
  new Function("module", "exports", "require", code)(module, module.exports, require);
  const FlinkSQL = module.exports.FlinkSQL;
  if (typeof FlinkSQL !== "function") {
    throw new Error(`the SQL parser's bundle ${file} does not export FlinkSQL`);
  }
  return new (FlinkSQL as new () => FlinkSqlApi)();
}

/** Runs `deno bundle` into a temporary directory in `dir`, renames the result to `file`, returns its text. */
function buildBundle(dir: string, file: string): string {
  try {
    Deno.mkdirSync(dir, { recursive: true });
  } catch (error) {
    throw new Error(`the SQL parser's cache directory ${dir} cannot be created: ${String(error)}`, {
      cause: error,
    });
  }
  const work = Deno.makeTempDirSync({ dir, prefix: ".build-" });
  try {
    const entryUrl = new URL("./dt_sql_parser_entry.ts", import.meta.url);
    let entry: string;
    let cwd: string;
    if (entryUrl.protocol === "file:") {
      // From a checkout: the project's deno.json and deno.lock apply (found from cwd).
      entry = fileURLToPath(entryUrl);
      cwd = dirname(entry);
    } else {
      entry = join(work, "entry.ts");
      Deno.writeTextFileSync(entry, ENTRY_SOURCE);
      cwd = work;
    }
    const out = join(work, BUNDLE_FILE);
    const args = [
      "bundle",
      "--quiet",
      "--platform=deno",
      "--format=cjs",
      "--minify",
      "-o",
      out,
      entry,
    ];
    let result: Deno.CommandOutput;
    try {
      result = new Deno.Command(Deno.execPath(), { args, cwd, stdout: "piped", stderr: "piped" })
        .outputSync();
    } catch (error) {
      throw new Error(
        `the SQL parser could not be built: running '${Deno.execPath()} ${
          args.join(" ")
        }' failed ` +
          `(${
            String(error)
          }); it needs --allow-run for the deno executable, or a bundle already in ${dir}`,
        { cause: error },
      );
    }
    if (!result.success) {
      const output = new TextDecoder().decode(result.stderr).trim() ||
        new TextDecoder().decode(result.stdout).trim();
      throw new Error(
        `the SQL parser could not be built: '${Deno.execPath()} ${
          args.join(" ")
        }' exited with code ${result.code}: ${output.slice(0, 2000)}`,
      );
    }
    const code = Deno.readTextFileSync(out);
    Deno.renameSync(out, file);
    return code;
  } finally {
    try {
      Deno.removeSync(work, { recursive: true });
    } catch {
      // Leaving an empty temporary directory behind is harmless.
    }
  }
}

if (import.meta.main) {
  // `deno run -A runtime/table/parser/flink_sql_bundle.ts`: builds the
  // bundle into the cache now (CI does this before running tests in parallel).
  const started = performance.now();
  loadFlinkSql();
  console.log(
    `dt-sql-parser bundle ready in ${join(bundleCacheDir(), BUNDLE_FILE)} (${
      Math.round(performance.now() - started)
    } ms)`,
  );
}
