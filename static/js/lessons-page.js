/**
 * The /lessons page: the course — its parts in teaching order, this browser's progress through
 * them (course.js) and where to start — and "Start the walkthrough". Starting one creates the
 * lesson's sandbox on the server, keeps it as this browser's sandbox (the one it had before is
 * deleted: one page, one cluster) and opens the main page, which resumes it — so the lesson
 * survives a reload there like any sandbox does.
 */
import {Api} from './api.js';
import {createAlerts} from './controls/alerts.js';
import {createBusyNotice} from './controls/busy-notice.js';
import {readProgress} from './course.js';
import {adoptSandbox} from './sandbox.js';
import {TeachingApi} from './teaching-api.js';
import {createLessonList} from './views/lesson-list.js';

const $ = (id) => document.getElementById(id);
const alerts = createAlerts($('errors'), $('infos'));
const api = new Api();
const teaching = new TeachingApi();
const busy = createBusyNotice($('busy'));

async function startWalkthrough(lesson) {
  let sandbox;
  try {
    // A full or busy server is asked again when it says, as the main page does for a sandbox.
    sandbox = await busy.retrying(() => teaching.startWalkthrough(lesson.id));
  } catch (error) {
    alerts.error(`Could not start “${lesson.title}”: ${error.message}`);
    return;
  }
  await adoptSandbox(api, sandbox);
  window.location.assign('/');
}

const list = createLessonList($('lesson-list'), {
  buttons: [{action: 'walkthrough', label: 'Start the walkthrough', run: startWalkthrough}],
});

teaching.lessons()
  .then((answer) => list.render(answer.lessons, {parts: answer.parts ?? [], progress: readProgress(localStorage)}))
  .catch((error) => {
    list.render([]);
    alerts.error(`Could not load the lessons: ${error.message}`);
  });
