/**
 * Property tests of the parser's precedence: random expression trees of
 * AND, OR, NOT, IS [NOT] NULL, comparisons, [NOT] BETWEEN, LIKE, [NOT] IN,
 * `+ - * / %`, `||`, unary minus and calls, printed
 * with only the parentheses their precedence needs, parse back into the
 * same tree, in WHERE and as a SELECT item (where the grammar's ambiguity
 * of a leading column, `a - 1` and `f(x)`, is mended by the translation).
 *
 * The precedence is Flink's (Calcite's `SqlStdOperatorTable`): `OR` 22,
 * `AND` 24, `NOT` 26, `IS [NOT] NULL` 28, comparisons 30, `BETWEEN`,
 * `LIKE` and `IN` 32, `+ -` 40, `* / % ||` 60, unary minus 80. (The
 * FlinkSQL grammar differs for `||`, IS and the predicates; the
 * translation regroups them.)
 *
 * Counterexamples found so far are kept as fixed examples (run first):
 * `a * -(NOT a)` as a SELECT item (the grammar read `a` and a stray
 * `(*) - (NOT a)`, `*` taken as the star), `a + b || c` (grouped by the
 * grammar as `(a + b) || c`), `NOT a IS NULL IS NULL` (the grammar's
 * second IS took the NOT), `a = b LIKE c` and `a BETWEEN b AND c = a`
 * (the grammar applied the predicate to the comparison, and took the
 * comparison into the BETWEEN's upper bound).
 *
 * `WEIR_PROPERTY_RUNS` (default 100) and `WEIR_PROPERTY_SEED` set the
 * number of runs and the seed, for longer searches by hand.
 *
 * @module
 */

import assert from "node:assert/strict";
import fc from "npm:fast-check@4.11.0";
import { parseScript } from "./parser.ts";
import type { Expr } from "./sql_ast.ts";

/** Binding strength, higher binds tighter (Flink's / Calcite's order). */
const PRECEDENCE: Readonly<Record<string, number>> = {
  OR: 1,
  AND: 2,
  NOT: 3,
  IS: 3.5, // IS [NOT] NULL (Calcite 28)
  "=": 4,
  "<>": 4,
  "<": 4,
  ">=": 4,
  LIKE: 4.5, // and BETWEEN, IN (Calcite 32)
  "+": 5,
  "-": 5,
  "||": 6,
  "*": 6,
  "/": 6,
  "%": 6,
  NEGATE: 7,
  ATOM: 8,
};

function precedence(e: Expr): number {
  switch (e.k) {
    case "binary":
      return PRECEDENCE[e.op]!;
    case "not":
      return PRECEDENCE.NOT!;
    case "negate":
      return PRECEDENCE.NEGATE!;
    case "isNull":
      return PRECEDENCE.IS!;
    case "between":
    case "in":
      return PRECEDENCE.LIKE!;
    default:
      return PRECEDENCE.ATOM!;
  }
}

/**
 * SQL text of `e` with the fewest parentheses (left-associative binaries;
 * comparisons, LIKE, BETWEEN and IN do not chain; a BETWEEN's lower bound
 * is parenthesized unless it is arithmetic: Flink lets it be anything up
 * to AND, the grammar only a comparison without predicates).
 */
function print(e: Expr): string {
  const wrap = (inner: Expr, needed: boolean) => needed ? `(${print(inner)})` : print(inner);
  const LIKE = PRECEDENCE.LIKE!;
  switch (e.k) {
    case "binary": {
      const p = PRECEDENCE[e.op]!;
      const chains = p !== 4 && p !== LIKE;
      return `${
        wrap(e.left, precedence(e.left) < p || (!chains && precedence(e.left) === p))
      } ${e.op} ${wrap(e.right, precedence(e.right) <= p)}`;
    }
    case "isNull":
      return `${wrap(e.expr, precedence(e.expr) < PRECEDENCE.IS!)} IS ${
        e.negated ? "NOT " : ""
      }NULL`;
    case "between": {
      return `${wrap(e.expr, precedence(e.expr) <= LIKE)} ${e.negated ? "NOT " : ""}BETWEEN ${
        wrap(e.low, precedence(e.low) < 5)
      } AND ${wrap(e.high, precedence(e.high) <= LIKE)}`;
    }
    case "in":
      return `${wrap(e.expr, precedence(e.expr) <= LIKE)} ${e.negated ? "NOT " : ""}IN (${
        e.list.map(print).join(", ")
      })`;
    case "not":
      return `NOT ${wrap(e.expr, precedence(e.expr) < PRECEDENCE.NOT!)}`;
    case "negate": {
      const inner = wrap(e.expr, precedence(e.expr) < PRECEDENCE.NEGATE!);
      return inner.startsWith("-") ? `- ${inner}` : `-${inner}`; // `--` would start a comment
    }
    case "column":
      return e.name;
    case "literal":
      return String(e.value);
    case "call":
      return `${e.name}(${e.args.map(print).join(", ")})`;
    default:
      throw new Error(`not generated: ${e.k}`);
  }
}

/** BETWEEN, LIKE or IN, which Flink binds tighter than comparisons. */
function isPredicate(e: Expr): boolean {
  return e.k === "between" || e.k === "in" || (e.k === "binary" && e.op === "LIKE");
}

const atom: fc.Arbitrary<Expr> = fc.oneof(
  fc.constantFrom("a", "b", "c").map((name): Expr => ({ k: "column", table: null, name })),
  fc.nat(99).map((value): Expr => ({ k: "literal", value })),
);

const { expr } = fc.letrec<{ expr: Expr }>((tie) => ({
  expr: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    atom,
    fc.record({
      k: fc.constant("binary" as const),
      op: fc.constantFrom("OR", "AND", "=", "<>", "<", ">=", "LIKE", "+", "-", "||", "*", "/", "%"),
      left: tie("expr"),
      right: tie("expr"),
    })
      // `x IN (...) = y` and `a LIKE b = c LIKE d` are Flink SQL, but the
      // FlinkSQL grammar parses neither a comparison after IN (...) nor a
      // comparison of two BETWEEN/LIKE/IN predicates; the parser refuses
      // both with a message asking for parentheses (parser_expressions_test.ts), so
      // they are not generated.
      .filter((r) =>
        PRECEDENCE[r.op] !== 4 || !(r.left.k === "in" ||
          (isPredicate(r.left) && isPredicate(r.right)))
      )
      .map((r): Expr => ({ k: r.k, op: r.op, left: r.left, right: r.right })),
    fc.record({ expr: tie("expr"), negated: fc.boolean() })
      .map(({ expr, negated }): Expr => ({ k: "isNull", expr, negated })),
    fc.record({ expr: tie("expr"), low: tie("expr"), high: tie("expr"), negated: fc.boolean() })
      .map(({ expr, low, high, negated }): Expr => ({ k: "between", expr, low, high, negated })),
    fc.record({ expr: tie("expr"), item: tie("expr"), negated: fc.boolean() })
      .map(({ expr, item, negated }): Expr => ({ k: "in", expr, list: [item], negated })),
    tie("expr").map((e): Expr => ({ k: "not", expr: e })),
    // Unary minus of a number literal folds into a negative literal: negate other things.
    tie("expr").filter((e) => e.k !== "literal").map((e): Expr => ({ k: "negate", expr: e })),
    tie("expr").map((e): Expr => ({ k: "call", name: "F", args: [e] })),
  ),
}));

const column = (name: string): Expr => ({ k: "column", table: null, name });
const binary = (op: string, left: Expr, right: Expr): Expr => ({ k: "binary", op, left, right });

/** Counterexamples found before, run first on every run. */
const REGRESSIONS: Expr[] = [
  // `a * -(NOT a)`: failed as a SELECT item.
  binary("*", column("a"), { k: "negate", expr: { k: "not", expr: column("a") } }),
  // `a + b || c` is `a + (b || c)` in Flink.
  binary("+", column("a"), binary("||", column("b"), column("c"))),
  // `a || b * c` is `(a || b) * c` in Flink.
  binary("*", binary("||", column("a"), column("b")), column("c")),
  // `NOT a IS NULL IS NULL`: IS binds tighter than NOT; the grammar's second IS took the NOT.
  {
    k: "not",
    expr: { k: "isNull", expr: { k: "isNull", expr: column("a"), negated: false }, negated: false },
  },
  // `NOT a IN (b) IS NULL`: likewise.
  {
    k: "not",
    expr: {
      k: "isNull",
      expr: { k: "in", expr: column("a"), list: [column("b")], negated: false },
      negated: false,
    },
  },
  // `a = b LIKE c` is `a = (b LIKE c)` in Flink.
  binary("=", column("a"), binary("LIKE", column("b"), column("c"))),
  // `a BETWEEN b AND c = a` is `(a BETWEEN b AND c) = a` in Flink.
  binary("=", {
    k: "between",
    expr: column("a"),
    low: column("b"),
    high: column("c"),
    negated: false,
  }, column("a")),
];

function roundTrips(e: Expr): void {
  const text = print(e);
  const [where] = parseScript(`SELECT a FROM t WHERE ${text}`);
  assert.ok(where?.k === "select");
  assert.deepEqual(where.query.where, e, text);
  const [select] = parseScript(`SELECT ${text}, b FROM t`);
  assert.ok(select?.k === "select");
  assert.deepEqual(select.query.items[0], { k: "expr", expr: e, alias: null }, text);
}

Deno.test("the printer prints the regressions as they were found", () => {
  assert.deepEqual(REGRESSIONS.map(print), [
    "a * -(NOT a)",
    "a + b || c",
    "a || b * c",
    "NOT a IS NULL IS NULL",
    "NOT a IN (b) IS NULL",
    "a = b LIKE c",
    "a BETWEEN b AND c = a",
  ]);
});

Deno.test("an expression printed with minimal parentheses parses back into the same tree, in WHERE and in SELECT", () => {
  const seed = Deno.env.get("WEIR_PROPERTY_SEED");
  fc.assert(fc.property(expr, roundTrips), {
    numRuns: Number(Deno.env.get("WEIR_PROPERTY_RUNS") ?? 100),
    examples: REGRESSIONS.map((e): [Expr] => [e]),
    ...(seed === undefined ? {} : { seed: Number(seed) }),
  });
});
