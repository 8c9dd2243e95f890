/**
 * A stateless table operator (`Calc`, a scan's watermark assigner, a
 * window TVF) runs at its input's parallelism when the input's was set, so
 * it is chained to it over a forward edge. Otherwise a parallelism-1
 * source followed by an operator at the job's parallelism 2 would
 * rebalance rows round-robin, and two changes of one row (`+I` then `-U`)
 * could reach the next keyed operator in the wrong order: a changelog is
 * only correct in order per key. (Flink's planner gives a Calc its input's
 * parallelism for the same reason.) Found by the join property test, with
 * a filter pushed below a join of two changelogs.
 *
 * @module
 */

import { type DataStream, SingleOutputStreamOperator } from "../api/datastream.ts";

/**
 * Gives `output` the parallelism of `input` when `input` is an operator
 * whose parallelism was set.
 * @returns `output`.
 */
export function keepInputParallelism<T, O>(
  input: DataStream<T>,
  output: SingleOutputStreamOperator<O>,
): SingleOutputStreamOperator<O> {
  if (input instanceof SingleOutputStreamOperator && input.node.parallelism !== undefined) {
    output.setParallelism(input.node.parallelism);
  }
  return output;
}
