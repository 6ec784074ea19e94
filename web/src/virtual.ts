import {
  elementScroll,
  observeElementOffset,
  observeElementRect,
  Virtualizer,
  type VirtualizerOptions,
} from "@tanstack/virtual-core";
import { useLayoutEffect, useReducer, useState } from "preact/hooks";

type Options = Pick<
  VirtualizerOptions<HTMLElement, Element>,
  "count" | "getScrollElement" | "estimateSize" | "overscan" | "getItemKey"
>;

/**
 * A virtualised list over @tanstack/virtual-core: only the rows in view (and a few around them) are in the DOM,
 * so ten thousand chats scroll like ten. The hook re-renders the component whenever the visible range moves.
 */
export function useVirtualizer(options: Options): Virtualizer<HTMLElement, Element> {
  const [, rerender] = useReducer((n: number) => n + 1, 0);
  const resolved: VirtualizerOptions<HTMLElement, Element> = {
    scrollToFn: elementScroll,
    observeElementRect,
    observeElementOffset,
    ...options,
    onChange: () => rerender(0),
  };
  const [instance] = useState(() => new Virtualizer(resolved));
  instance.setOptions(resolved);
  useLayoutEffect(() => instance._didMount(), []);
  useLayoutEffect(() => instance._willUpdate());
  return instance;
}
