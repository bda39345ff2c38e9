/**
 * FlowView's status line for the selection and the paths shown for it.
 *
 * Most methods draw paths from the selected node, and flow_text.ts's
 * describeSelection says where they go (down to the inputs, up to the top).
 * A method whose paths are the same whichever node is selected (lrp: AttnLRP
 * explains the target, `per_selection` false in the kernel's reply) gets a
 * line that says so instead, in agreement with its note under the diagram;
 * before, the status line described "paths from the selected token" while
 * the note said the result does not depend on the selection.
 */
import type { PathData } from "./flow_paths";
import type { FlowData, Selection } from "./flow_state";
import { describeNode, describeSelection } from "./flow_text";

export function describeStatus(data: FlowData | null, sel: Selection, paths: PathData | null, query: number): string {
  if (!data || sel.token < 0 || !paths || paths.perSelection) return describeSelection(data, sel);
  const target = query >= 0 && query < data.n ? ` at query #${query} ${JSON.stringify(data.tokens[query])}` : "";
  return (
    `${paths.method} is the same for every selection: it explains the target${target} ` +
    `through every node and edge (the selection is only marked). Selected ${describeNode(data, sel.layer, sel.token)}.`
  );
}
