/**
 * A first visit to the main page points to the first lesson of the course: a note above the
 * cluster with "Start: <its title>", until this browser has started a lesson or dismissed it.
 * Starting it is what /lessons does: a walkthrough becomes this browser's sandbox.
 */
import {firstToDo, readProgress} from './course.js';
import {adoptSandbox} from './sandbox.js';

const SEEN_KEY = 'kclab.welcomed';

export async function maybeWelcome({teaching, api, alerts, before}) {
  const progress = readProgress(localStorage);
  if (localStorage.getItem(SEEN_KEY) || Object.keys(progress).length) return;
  const listing = await teaching.lessons().catch(() => null);
  const first = listing ? firstToDo(listing.parts, progress) : null;
  const lesson = listing?.lessons.find((l) => l.id === first);
  if (!lesson) return;
  const note = document.createElement('aside');
  note.className = 'welcome';
  note.setAttribute('aria-label', 'Where to start');
  note.innerHTML = '<span>New here? The course starts with <strong class="welcome-title"></strong> — one idea at a time, '
    + 'a prediction before every outcome.</span><button type="button" class="primary" data-action="first-lesson"></button>'
    + '<a href="/lessons">See the whole course</a><button type="button" data-action="dismiss">Not now</button>';
  note.querySelector('.welcome-title').textContent = lesson.title;
  note.querySelector('[data-action="first-lesson"]').textContent = 'Start the first lesson ▶';
  note.querySelector('[data-action="dismiss"]').addEventListener('click', () => {
    localStorage.setItem(SEEN_KEY, '1');
    note.remove();
  });
  note.querySelector('[data-action="first-lesson"]').addEventListener('click', async (event) => {
    const button = event.currentTarget;
    button.disabled = true;
    let sandbox;
    try {
      sandbox = await teaching.startWalkthrough(lesson.id);
    } catch (error) {
      button.disabled = false;
      alerts.error(`Could not start “${lesson.title}”: ${error.message}`);
      return;
    }
    localStorage.setItem(SEEN_KEY, '1');
    await adoptSandbox(api, sandbox);
    window.location.reload();
  });
  before.before(note);
}
