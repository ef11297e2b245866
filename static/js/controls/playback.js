/**
 * Playback: pause/play, step one record, slow motion, the scrub slider and "go live".
 * The slider spans the records the page can show (from -1, the empty cluster, once earlier
 * records can be fetched); dragging it scrubs the view to that seq.
 */
import {SPEEDS} from '../records.js';

const SPEED_LABELS = new Map([[1, '1×'], [1 / 2, '½×'], [1 / 5, '⅕×'], [1 / 10, '1/10×'], [1 / 20, '1/20×']]);

export function createPlayback(container, store) {
  container.classList.add('playback');
  container.setAttribute('role', 'group');
  container.setAttribute('aria-label', 'Playback');
  container.innerHTML = `
    <button type="button" class="pb-play"></button>
    <button type="button" class="pb-step" aria-keyshortcuts="ArrowRight">Step ▸</button>
    <label class="pb-speed-label">Speed <select class="pb-speed"></select></label>
    <label class="pb-scrub-label">Seq <input type="range" class="pb-scrub" min="-1" max="0" step="1" value="0"></label>
    <output class="pb-position" aria-live="off"></output>
    <button type="button" class="pb-live">Go live</button>`;
  const $ = (sel) => container.querySelector(sel);
  const play = $('.pb-play');
  const speed = $('.pb-speed');
  const scrub = $('.pb-scrub');
  for (const s of SPEEDS) speed.append(new Option(SPEED_LABELS.get(s) ?? `${s}×`, String(s)));

  play.addEventListener('click', () => store.togglePlay());
  play.setAttribute('aria-keyshortcuts', 'Space');
  $('.pb-step').addEventListener('click', () => store.step());
  $('.pb-live').addEventListener('click', () => store.goLive());
  speed.addEventListener('change', () => store.setSpeed(Number(speed.value)));
  // The target is read when the slider moves, not in the frame callback: a render in between
  // (records keep arriving) may already have put the unfocused slider back on the cursor.
  let pendingScrub = null;
  let scrubTarget = null;
  scrub.addEventListener('input', () => {
    scrubTarget = Number(scrub.value);
    if (pendingScrub === null) {
      pendingScrub = requestAnimationFrame(() => {
        pendingScrub = null;
        store.scrubTo(scrubTarget);
      });
    }
  });

  function render() {
    const live = store.mode === 'live';
    play.textContent = live ? '❚❚ Pause' : '▶ Play';
    play.setAttribute('aria-label', live ? 'Pause' : 'Play');
    speed.value = String(store.speed);
    scrub.min = String(store.canFetchHistory ? -1 : store.minSeq);
    scrub.max = String(Math.max(store.head, 0));
    if (document.activeElement !== scrub) scrub.value = String(store.seq);
    scrub.setAttribute('aria-valuetext', `seq ${store.seq} of ${store.head}`);
    const behind = store.head - store.seq;
    $('.pb-position').textContent = `#${store.seq} / ${store.head}${behind > 0 ? ` (${behind} behind)` : ''}`;
    $('.pb-live').disabled = live && behind === 0;
    $('.pb-step').disabled = behind === 0;
  }

  return {render};
}
