/**
 * Set up a view's listeners in one place and take them all down with one
 * call: DOM events, model events (trait changes, custom messages) and any
 * other clean-up (timers, animation frames, observers). Every view's render
 * returns `listeners.dispose`, so nothing it registered outlives it.
 */

/** What a model must offer: anywidget's `on` / `off` (only event names and callbacks). */
export interface ModelEvents {
  on(name: string, callback: (...args: never[]) => void): void;
  off(name: string, callback: (...args: never[]) => void): void;
}

export class Listeners {
  private readonly undo: (() => void)[] = [];
  private disposed = false;

  /** Listen to a DOM event on `target` (an element, the document, the window). */
  on<K extends keyof HTMLElementEventMap>(
    target: EventTarget,
    type: K,
    fn: (event: HTMLElementEventMap[K]) => void,
    options?: AddEventListenerOptions,
  ): this {
    const listener = fn as EventListener;
    target.addEventListener(type, listener, options);
    return this.add(() => target.removeEventListener(type, listener, options));
  }

  /**
   * Call `fn` on the model event `name`, or on each of several separated by
   * spaces ("change:x change:y", "msg:custom"). Registered one name at a
   * time: Jupyter's Backbone models split such a list themselves, marimo's
   * model keeps it as one name that no event ever has.
   */
  model(model: object, name: string, fn: (...args: never[]) => void): this {
    const events = model as ModelEvents;
    for (const one of name.split(/\s+/).filter(Boolean)) {
      events.on(one, fn);
      this.add(() => events.off(one, fn));
    }
    return this;
  }

  /** Call `fn` when any of the traits `names` changes. */
  traits(model: object, names: readonly string[], fn: () => void): this {
    for (const name of names) this.model(model, `change:${name}`, fn);
    return this;
  }

  /** Run `fn` on dispose (cancel a timer, disconnect an observer, ...). */
  add(fn: () => void): this {
    if (this.disposed) fn();
    else this.undo.push(fn);
    return this;
  }

  /** Remove every listener, last registered first; later calls do nothing. */
  readonly dispose = (): void => {
    if (this.disposed) return;
    this.disposed = true;
    while (this.undo.length > 0) (this.undo.pop() as () => void)();
  };
}
