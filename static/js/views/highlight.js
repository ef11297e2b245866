/**
 * What a lesson points at, marked on the page: every element the targets' selectors
 * (lesson.js `highlightSelectors`) find gets `.lesson-highlight` and `data-lesson-highlight`;
 * everything else loses them. Run every frame after the other views drew — a view may have
 * drawn the element anew — so it costs a few querySelectorAll calls, never a redraw.
 */
import {highlightSelectors} from '../lesson.js';

/** Mark what the lesson points at (every frame: a view may have drawn the element anew). */
export function applyHighlights(targets) {
  const want = new Map();
  for (const {target, selector} of highlightSelectors(targets)) {
    for (const element of document.querySelectorAll(selector)) want.set(element, target);
  }
  for (const element of document.querySelectorAll('[data-lesson-highlight]')) {
    if (!want.has(element)) {
      element.removeAttribute('data-lesson-highlight');
      element.classList.remove('lesson-highlight');
    }
  }
  for (const [element, target] of want) {
    if (element.dataset.lessonHighlight !== target) {
      element.dataset.lessonHighlight = target;
      element.classList.add('lesson-highlight');
      scrollIntoPanel(element);
    }
  }
}

/** A newly highlighted znode may be below the fold of the ZooKeeper panel: scroll the panel, not the page. */
function scrollIntoPanel(element) {
  const panel = element.closest('.zk-panel');
  if (!panel) return;
  const box = element.getBoundingClientRect();
  const outer = panel.getBoundingClientRect();
  if (box.top < outer.top || box.bottom > outer.bottom) panel.scrollTop += box.top - outer.top - outer.height / 3;
}
