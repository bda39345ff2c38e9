/**
 * What every view's traits share: the `Binary` type and `BaseTraits`. Each
 * family declares its own traits next to it (saliency/saliency_types.ts,
 * attention/attention_types.ts, ...): the message schema between the kernel
 * (Python, attnwidget/views/<family>/) and this bundle. The trait names are
 * checked against Python's by test/core/fixtures.test.ts (see trait_names.ts).
 *
 * Arrays never travel as JSON lists: Python sends them as `bytes` traits,
 * which ipywidgets/anywidget carry as binary buffers; here they arrive as a
 * DataView (ipywidgets 8), and some front ends hand over an ArrayBuffer or a
 * typed array instead, so every decoder accepts all three (see buffers.ts).
 * Every array is little-endian, C order, with its shape in a separate
 * `shape` trait; float32 unless a view says otherwise (buffers.ts decodes).
 */

/**
 * The value of a selection trait (a token, row, step, head, patch) when
 * nothing is selected, in every view (Python: attnwidget/views/core/selection.py).
 */
export const NONE = -1;

/** A binary trait value as a front end may deliver it. */
export type Binary = DataView | ArrayBuffer | ArrayBufferView;

/** Traits every attnwidget view has. */
export interface BaseTraits {
  /** Which view of this bundle renders the model ("saliency", ...). */
  _view: string;
}
