/**
 * Translates the FlinkSQL grammar's `timeIntervalExpression` into
 * `sql_ast.ts`'s `interval`: day-time intervals only (Flink's `INTERVAL
 * ... SECOND/MINUTE/HOUR/DAY`, and `'a:b' X TO Y`), as milliseconds with a
 * canonical text (`INTERVAL '10' SECOND`; `SECONDS` is written `SECOND`)
 * so that the same interval always has the same text. Year-month intervals
 * (`MONTH`, `YEAR`) are refused: no Weir operator takes them.
 *
 * @module
 */

import type { Expr } from "../sql_ast.ts";
import type { PNode, RuleNode } from "./parse_tree.ts";
import { child, need, stringValue, token, type TranslateContext } from "./translate_context.ts";

const UNIT_MILLIS: Readonly<Record<string, [string, number]>> = {
  MILLISECOND: ["MILLISECOND", 1],
  SECOND: ["SECOND", 1000],
  SECONDS: ["SECOND", 1000],
  MINUTE: ["MINUTE", 60_000],
  MINUTES: ["MINUTE", 60_000],
  HOUR: ["HOUR", 3_600_000],
  HOURS: ["HOUR", 3_600_000],
  DAY: ["DAY", 86_400_000],
  DAYS: ["DAY", 86_400_000],
};

const FIELD_ORDER = ["DAY", "HOUR", "MINUTE", "SECOND"];
const FIELD_LIMIT: Readonly<Record<string, number>> = { HOUR: 24, MINUTE: 60, SECOND: 60 };

function unit(ctx: TranslateContext, node: PNode): [string, number] {
  const written = ctx.text(node).toUpperCase();
  const found = UNIT_MILLIS[written];
  if (found === undefined) {
    return ctx.unsupported(
      node,
      `the interval unit ${written} (only day-time intervals: DAY, HOUR, MINUTE, SECOND, MILLISECOND)`,
    );
  }
  return found;
}

function intervalValue(ctx: TranslateContext, node: RuleNode): string {
  const literal = token(node, "STRING_LITERAL");
  return literal === undefined
    ? ctx.text(node).replace(/\s+/g, "")
    : stringValue(ctx, literal).trim();
}

/**
 * `INTERVAL '10' SECOND`, `INTERVAL '1:30' MINUTE TO SECOND`... as
 * milliseconds (day-time intervals only), with a canonical text.
 */
export function translateInterval(ctx: TranslateContext, node: RuleNode): Expr {
  const multi = child(node, "errorCapturingMultiUnitsInterval");
  const toForm = child(node, "errorCapturingUnitToUnitInterval");
  if (multi !== undefined) {
    const units = need(multi, "multiUnitsInterval");
    if (multi.children.length > 1 || units.children.length !== 2) {
      return ctx.unsupported(
        node,
        `the interval ${ctx.text(node)} (one value and one unit, or 'a:b' X TO Y)`,
      );
    }
    const value = intervalValue(ctx, units.children[0] as RuleNode);
    const [name, millis] = unit(ctx, units.children[1]!);
    const m = /^([+-]?)(\d+(?:\.\d+)?)$/.exec(value);
    const total = m === null ? NaN : Number(m[2]) * millis * (m[1] === "-" ? -1 : 1);
    if (!Number.isInteger(total)) {
      return ctx.fail(
        units.children[0]!,
        `'${value}' is not a ${name} interval value (a number giving whole milliseconds)`,
      );
    }
    return { k: "interval", millis: total, text: `INTERVAL '${value}' ${name}` };
  }
  if (toForm !== undefined) {
    const body = need(toForm, "unitToUnitInterval");
    if (toForm.children.length > 1) return ctx.unsupported(node, `the interval ${ctx.text(node)}`);
    const [valueNode, fromNode, , toNode] = body.children;
    const value = intervalValue(ctx, valueNode as RuleNode);
    const [from] = unit(ctx, fromNode!);
    const [to] = unit(ctx, toNode!);
    const fields = FIELD_ORDER.slice(FIELD_ORDER.indexOf(from), FIELD_ORDER.indexOf(to) + 1);
    if (fields.length < 2) return ctx.unsupported(node, `the interval ${from} TO ${to}`);
    const sign = value.startsWith("-") ? -1 : 1;
    const parts = value.replace(/^[+-]/, "").split(/[ :]/);
    const pattern = fields.map((
      f,
    ) => (f === "DAY" ? "d" : f === "HOUR" ? "hh" : f === "MINUTE" ? "mm" : "ss[.fff]"))
      .join(":").replace("d:", "d ");
    const bad = (): never =>
      ctx.fail(valueNode!, `'${value}' does not match ${from} TO ${to} (expected '${pattern}')`);
    if (parts.length !== fields.length) bad();
    let total = 0;
    fields.forEach((f, i) => {
      const part = parts[i]!;
      const last = f === "SECOND";
      if (!(last ? /^\d+(\.\d{1,3})?$/ : /^\d+$/).test(part)) bad();
      const n = Number(part);
      if (i > 0 && n >= FIELD_LIMIT[f]!) bad();
      total += n * UNIT_MILLIS[f]![1];
    });
    return {
      k: "interval",
      millis: Math.round(total) * sign,
      text: `INTERVAL '${value}' ${from} TO ${to}`,
    };
  }
  return ctx.fail(node, "INTERVAL needs a value and a unit, e.g. INTERVAL '10' SECOND");
}
