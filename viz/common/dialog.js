// Confirmation with a native <dialog>: modal, focus kept inside, Escape cancels.

import { h } from './dom.js';

let dialog = null;

function ensure() {
  if (dialog) return dialog;
  const msg = h('p', { id: 'confirm-msg' });
  const cancel = h('button', { type: 'submit', value: 'cancel', class: 'cancel', autofocus: true }, 'Cancel');
  const ok = h('button', { type: 'submit', value: 'confirm', class: 'danger confirm-ok' }, 'Confirm');
  dialog = h('dialog', { class: 'confirm', 'aria-labelledby': 'confirm-msg' },
    h('form', { method: 'dialog' }, msg, h('div', { class: 'actions' }, cancel, ok)));
  document.body.append(dialog);
  return dialog;
}

/** Ask `message`; resolves true only when the user confirms. */
export function confirmDialog(message, { confirmLabel = 'Confirm', danger = true } = {}) {
  const d = ensure();
  d.querySelector('#confirm-msg').textContent = message;
  const ok = d.querySelector('.confirm-ok');
  ok.textContent = confirmLabel;
  ok.className = `${danger ? 'danger' : 'primary'} confirm-ok`;
  d.returnValue = '';
  return new Promise((resolve) => {
    d.addEventListener('close', () => resolve(d.returnValue === 'confirm'), { once: true });
    d.showModal();
    d.querySelector('.cancel').focus();
  });
}
