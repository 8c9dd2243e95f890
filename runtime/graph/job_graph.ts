/**
 * StreamGraph -> JobGraph: resolves partitioners, assigns stable uids and
 * chains operators into vertices (Flink's `StreamingJobGraphGenerator`).
 *
 * ## Chaining
 *
 * A node joins its input's vertex (runs in the same subtask actor, called
 * directly, without serialization) when it has exactly one input edge, that
 * edge is `forward`, both sides have equal parallelism and max parallelism,
 * the input is not a sink, and neither side disabled chaining. A vertex is
 * therefore a tree of operators rooted at its head; side outputs may chain.
 * A two-input operator always heads its vertex: each of its input edges
 * carries the input it feeds (`typeNumber` 1 or 2, Flink's `StreamEdge`
 * `typeNumber`), and each input may be keyed by its own key selector.
 *
 * ## Uids
 *
 * A uid identifies an operator's state across restores. Set one with
 * `.uid()`. Otherwise a deterministic uid is derived from the operator's kind,
 * name and its inputs' uids (and an ordinal among identical siblings), and
 * stateful operators get a warning: such a uid changes when the graph above
 * the operator changes. Duplicate uids are an error.
 *
 * @module
 */

import {
  isTwoInput,
  type KeySelector,
  type OperatorSpec,
  type Partitioner,
  type StreamEdge,
  type StreamGraph,
  type StreamNode,
} from "./stream_graph.ts";

/** One operator inside a vertex. */
export interface ChainedOperator {
  /** Position in the vertex's `operators` (0 = head). */
  readonly index: number;
  /** The StreamGraph node it came from. */
  readonly nodeId: number;
  /** The stable uid. */
  readonly uid: string;
  /** Display name. */
  readonly name: string;
  /** What it does. */
  readonly spec: OperatorSpec;
  /** Key selector of its keyed input, for keyed operators (of input 1 for two-input ones). */
  readonly keySelector: KeySelector | undefined;
  /** Key selector of input 2, for a keyed two-input operator. */
  readonly keySelector2?: KeySelector | undefined;
  /** Where its output goes. */
  readonly outputs: OperatorOutput[];
}

/** A destination of an operator's output: a chained operator or a network edge. */
export type OperatorOutput =
  | { readonly kind: "chained"; readonly operator: number; readonly sideOutput: string | undefined }
  | { readonly kind: "network"; readonly edge: number; readonly sideOutput: string | undefined };

/** A vertex: an operator chain run by `parallelism` subtasks. */
export interface JobVertex {
  /** Position in {@linkcode JobGraph.vertices}. */
  readonly index: number;
  /** `v<index>`, safe as a subject token. */
  readonly id: string;
  /** Names of the chained operators joined by ` -> `. */
  readonly name: string;
  /** Number of parallel subtasks. */
  readonly parallelism: number;
  /** Number of key groups. */
  readonly maxParallelism: number;
  /** The chain, head first, in topological order. */
  readonly operators: ChainedOperator[];
  /** Indices of input edges, in order; the input gate's channels follow this order. */
  readonly inputs: number[];
  /** Indices of output edges. */
  readonly outputs: number[];
  /** Whether the head is a source. */
  readonly isSource: boolean;
}

/** A network connection between two vertices. */
export interface JobEdge {
  /** Position in {@linkcode JobGraph.edges}. */
  readonly index: number;
  /** Producing vertex. */
  readonly source: number;
  /** Producing operator inside the source vertex. */
  readonly sourceOperator: number;
  /** Consuming vertex (records go to its head operator). */
  readonly target: number;
  /** Resolved partitioner. */
  readonly partitioner: Partitioner;
  /** For `hash`. */
  readonly keySelector: KeySelector | undefined;
  /** The side output carried, or `undefined` for the main output. */
  readonly sideOutput: string | undefined;
  /**
   * The target's input this edge feeds (Flink's `typeNumber`): 0 for a
   * one-input head (or absent), 1 or 2 for a two-input head
   * (`processElement1`/`2`).
   */
  readonly typeNumber?: 0 | 1 | 2 | undefined;
}

/** The executable dataflow of one job. */
export interface JobGraph {
  /** The job's name. */
  readonly name: string;
  /** Vertices in topological order. */
  readonly vertices: JobVertex[];
  /** Edges. */
  readonly edges: JobEdge[];
  /** Warnings about the graph (e.g. generated uids on stateful operators). */
  readonly warnings: string[];
}

/** Options of {@linkcode buildJobGraph}. */
export interface JobGraphOptions {
  /** Default parallelism of operators without their own. */
  readonly parallelism: number;
  /** Default max parallelism (number of key groups). */
  readonly maxParallelism: number;
  /** Whether to chain operators (default true). */
  readonly chaining: boolean;
}

/** The graph is not valid (e.g. a forward edge between unequal parallelisms, duplicate uids). */
export class InvalidJobGraphError extends Error {
  /** The error class name. */
  override name = "InvalidJobGraphError";
}

/** Whether an operator keeps state that must survive restores (and so deserves an explicit uid). */
export function isStateful(spec: OperatorSpec): boolean {
  switch (spec.kind) {
    case "source":
    case "keyedProcess":
    case "reduce":
    case "aggregate":
    case "window":
    case "keyedCoProcess":
    case "broadcastProcess":
    case "keyedBroadcastProcess":
    case "intervalJoin":
      return true;
    case "sink":
      // A SinkV2 keeps committables (with a committer) or writer state (read back by checkWriterState).
      if (spec.sink.kind === "v2") {
        return spec.sink.createCommitter !== undefined || spec.sink.checkWriterState !== undefined;
      }
      return spec.sink.kind === "two-phase-commit" ||
        typeof (spec.sink as { snapshotState?: unknown }).snapshotState === "function";
    default:
      return typeof spec.fn === "object" && spec.fn !== null &&
        typeof (spec.fn as { snapshotState?: unknown }).snapshotState === "function";
  }
}

/**
 * A two-input operator needs edges numbered 1 and 2 and no others; a
 * one-input operator takes no numbered edge.
 * @throws {InvalidJobGraphError} otherwise.
 */
function checkInputNumbers(node: StreamNode, ins: readonly StreamEdge[]): void {
  const numbers = new Set(ins.map((e) => e.typeNumber ?? 0));
  if (isTwoInput(node.spec)) {
    if (!numbers.has(1) || !numbers.has(2) || numbers.has(0)) {
      throw new InvalidJobGraphError(
        `Two-input operator '${node.name}' needs input edges numbered 1 and 2: current numbers are [${
          [...numbers].sort().join(", ")
        }]`,
      );
    }
  } else if (numbers.has(1) || numbers.has(2)) {
    throw new InvalidJobGraphError(
      `One-input operator '${node.name}' (${node.spec.kind}) has an input edge numbered for a two-input operator`,
    );
  }
}

/** FNV-1a over a string, 32 bits, as 8 hex digits. */
function fnv1a(text: string, seed: number): string {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}

function assignUids(graph: StreamGraph, incoming: Map<number, StreamEdge[]>): string[] {
  const uids: string[] = [];
  const seen = new Map<string, number>();
  const ordinals = new Map<string, number>();
  for (const node of graph.nodes) {
    if (node.uid !== undefined) {
      uids[node.id] = node.uid;
    } else {
      const inputs = (incoming.get(node.id) ?? []).map((e) =>
        `${uids[e.source]}/${e.sideOutput ?? ""}${
          e.typeNumber === undefined ? "" : `#${e.typeNumber}`
        }`
      )
        .sort().join(",");
      const basis = `${node.spec.kind}|${node.name}|${inputs}`;
      const ordinal = ordinals.get(basis) ?? 0;
      ordinals.set(basis, ordinal + 1);
      const text = `${basis}|${ordinal}`;
      uids[node.id] = `auto-${fnv1a(text, 0x811c9dc5)}${fnv1a(text, 0x01000193)}`;
    }
    const uid = uids[node.id]!;
    const other = seen.get(uid);
    if (other !== undefined) {
      throw new InvalidJobGraphError(
        `Duplicate uid '${uid}' on operators '${
          graph.node(other).name
        }' and '${node.name}': uids must be unique in a job`,
      );
    }
    seen.set(uid, node.id);
  }
  return uids;
}

/**
 * Builds the JobGraph of `graph`.
 *
 * @throws {InvalidJobGraphError} for a forward edge between unequal
 *   parallelisms, a hash edge without a key selector, duplicate uids, or a
 *   graph without sources.
 */
export function buildJobGraph(
  graph: StreamGraph,
  name: string,
  options: JobGraphOptions,
): JobGraph {
  const warnings: string[] = [];
  const parallelismOf = (n: StreamNode) => n.parallelism ?? options.parallelism;
  const maxParallelismOf = (n: StreamNode) => n.maxParallelism ?? options.maxParallelism;
  for (const node of graph.nodes) {
    const p = parallelismOf(node);
    const mp = maxParallelismOf(node);
    if (!Number.isInteger(p) || p < 1 || p > mp) {
      throw new InvalidJobGraphError(
        `Operator '${node.name}': parallelism must be an integer in 1..maxParallelism (${mp}): current value is ${p}`,
      );
    }
  }
  if (!graph.nodes.some((n) => n.spec.kind === "source")) {
    throw new InvalidJobGraphError(`Job '${name}' has no source`);
  }

  const incoming = new Map<number, StreamEdge[]>();
  const outgoing = new Map<number, StreamEdge[]>();
  for (const edge of graph.edges) {
    (incoming.get(edge.target) ?? incoming.set(edge.target, []).get(edge.target)!).push(edge);
    (outgoing.get(edge.source) ?? outgoing.set(edge.source, []).get(edge.source)!).push(edge);
  }
  for (const node of graph.nodes) checkInputNumbers(node, incoming.get(node.id) ?? []);
  const uids = assignUids(graph, incoming);
  for (const node of graph.nodes) {
    if (node.uid === undefined && isStateful(node.spec)) {
      warnings.push(
        `Operator '${node.name}' is stateful but has no uid; using the generated uid '${
          uids[node.id]
        }'. Set .uid() so its state can be restored after the job changes.`,
      );
    }
  }

  const resolve = (edge: StreamEdge): Partitioner => {
    const up = graph.node(edge.source);
    const down = graph.node(edge.target);
    if (edge.partitioner === "hash" && !edge.keySelector) {
      throw new InvalidJobGraphError(`Hash edge into '${down.name}' has no key selector`);
    }
    if (edge.partitioner === "forward" && parallelismOf(up) !== parallelismOf(down)) {
      throw new InvalidJobGraphError(
        `Forward partitioning does not allow a change of parallelism: '${up.name}' has ${
          parallelismOf(up)
        }, '${down.name}' has ${parallelismOf(down)}; use rebalance() or keyBy()`,
      );
    }
    if (edge.partitioner !== undefined) return edge.partitioner;
    return parallelismOf(up) === parallelismOf(down) ? "forward" : "rebalance";
  };

  // Decide chaining: node id -> node id of the operator it chains to.
  const chainedTo = new Map<number, number>();
  for (const node of graph.nodes) {
    const ins = incoming.get(node.id) ?? [];
    if (
      !options.chaining || !node.chainable || node.spec.kind === "source" || ins.length !== 1 ||
      isTwoInput(node.spec) // a two-input operator heads its vertex (its inputs are numbered)
    ) {
      continue;
    }
    const edge = ins[0]!;
    const up = graph.node(edge.source);
    if (
      resolve(edge) === "forward" && up.chainable && up.spec.kind !== "sink" &&
      parallelismOf(up) === parallelismOf(node) && maxParallelismOf(up) === maxParallelismOf(node)
    ) {
      chainedTo.set(node.id, up.id);
    }
  }
  const headOf = (id: number): number => {
    let cur = id;
    while (chainedTo.has(cur)) cur = chainedTo.get(cur)!;
    return cur;
  };

  // Vertices in topological order of their heads (node ids are topological).
  const vertexOfHead = new Map<number, number>();
  const members = new Map<number, number[]>();
  for (const node of graph.nodes) {
    const head = headOf(node.id);
    if (!vertexOfHead.has(head)) {
      vertexOfHead.set(head, vertexOfHead.size);
      members.set(head, []);
    }
    members.get(head)!.push(node.id);
  }
  const opIndex = new Map<number, number>(); // node id -> index within its vertex
  for (const list of members.values()) list.forEach((id, i) => opIndex.set(id, i));
  const vertexOf = (nodeId: number) => vertexOfHead.get(headOf(nodeId))!;

  const edges: JobEdge[] = [];
  const vertexInputs = new Map<number, number[]>();
  const vertexOutputs = new Map<number, number[]>();
  const networkOutputs = new Map<number, OperatorOutput[]>();
  const chainedOutputs = new Map<number, OperatorOutput[]>();
  for (const edge of graph.edges) {
    if (chainedTo.get(edge.target) === edge.source) {
      const list = chainedOutputs.get(edge.source) ?? [];
      list.push({
        kind: "chained",
        operator: opIndex.get(edge.target)!,
        sideOutput: edge.sideOutput,
      });
      chainedOutputs.set(edge.source, list);
      continue;
    }
    const index = edges.length;
    const source = vertexOf(edge.source);
    const target = vertexOf(edge.target);
    edges.push({
      index,
      source,
      sourceOperator: opIndex.get(edge.source)!,
      target,
      partitioner: resolve(edge),
      keySelector: edge.keySelector,
      sideOutput: edge.sideOutput,
      typeNumber: edge.typeNumber ?? 0,
    });
    (vertexInputs.get(target) ?? vertexInputs.set(target, []).get(target)!).push(index);
    (vertexOutputs.get(source) ?? vertexOutputs.set(source, []).get(source)!).push(index);
    const list = networkOutputs.get(edge.source) ?? [];
    list.push({ kind: "network", edge: index, sideOutput: edge.sideOutput });
    networkOutputs.set(edge.source, list);
  }

  const vertices: JobVertex[] = [];
  for (const [head, index] of vertexOfHead) {
    const ids = members.get(head)!;
    const headNode = graph.node(head);
    const operators: ChainedOperator[] = ids.map((id, i) => {
      const node = graph.node(id);
      return {
        index: i,
        nodeId: id,
        uid: uids[id]!,
        name: node.name,
        spec: node.spec,
        keySelector: node.keySelector,
        keySelector2: node.keySelector2,
        outputs: [...(chainedOutputs.get(id) ?? []), ...(networkOutputs.get(id) ?? [])],
      };
    });
    vertices[index] = {
      index,
      id: `v${index}`,
      name: operators.map((o) => o.name).join(" -> "),
      parallelism: parallelismOf(headNode),
      maxParallelism: maxParallelismOf(headNode),
      operators,
      inputs: vertexInputs.get(index) ?? [],
      outputs: vertexOutputs.get(index) ?? [],
      isSource: headNode.spec.kind === "source",
    };
  }
  return { name, vertices, edges, warnings };
}
