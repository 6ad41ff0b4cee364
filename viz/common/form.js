// Forms from a create-form spec: {mod_name, title, fields: [{name, label, type, required,
// default, options, placeholder, help}], note}. Types: text, select, textarea, checkbox.
// Each field has its own error line; errors of unknown fields go to the form's message line.

import { h, uniqueId } from './dom.js';
import { ApiError, errorText } from './api.js';

/**
 * renderForm(spec, {submitLabel, validate, onSubmit}) -> controller
 *   onSubmit(values, action) is called with action 'create' (the submit button) or 'validate';
 *   it may return a promise; the buttons are disabled meanwhile.
 * controller: {el, values(), set(name, value), setErrors(errors), setMessage(text, kind), clear()}
 */
export function renderForm(spec, { submitLabel = 'Create', validate = true, onSubmit, idPrefix, className = 'stack' } = {}) {
  const prefix = idPrefix || uniqueId(`f-${spec.mod_name || 'form'}`);
  const inputs = new Map();
  const errs = new Map();
  const form = h('form', { class: className, novalidate: true, 'data-mod': spec.mod_name || '' });
  if (spec.note) form.append(h('p', { class: 'form-note' }, spec.note));

  for (const f of spec.fields || []) {
    const id = `${prefix}-${f.name}`;
    const errId = `${id}-err`;
    const helpId = `${id}-help`;
    const type = f.type || 'text';
    let input;
    if (type === 'select') {
      const options = (f.options || []).slice();
      if (f.default && !options.includes(f.default)) options.unshift(f.default);
      if (!f.required && !options.includes('')) options.unshift('');
      input = h('select', { id, name: f.name },
        options.map((o) => h('option', { value: o }, o === '' ? '(none)' : o)));
      input.value = f.default ?? '';
    } else if (type === 'textarea') {
      input = h('textarea', { id, name: f.name, placeholder: f.placeholder || null, rows: 6, spellcheck: 'false' });
      input.value = f.default ?? '';
    } else if (type === 'checkbox') {
      input = h('input', { id, name: f.name, type: 'checkbox' });
      input.checked = ['1', 'true', 'yes', 'on'].includes(String(f.default ?? '').toLowerCase());
    } else {
      input = h('input', { id, name: f.name, type: 'text', placeholder: f.placeholder || null, autocomplete: 'off', spellcheck: 'false' });
      input.value = f.default ?? '';
    }
    if (f.required) input.setAttribute('aria-required', 'true');
    const describedBy = [errId];
    if (f.help) describedBy.push(helpId);
    input.setAttribute('aria-describedby', describedBy.join(' '));
    const err = h('p', { class: 'field-error', id: errId, 'data-field': f.name, 'aria-live': 'polite' });
    const label = h('label', { for: id }, f.label || f.name, f.required ? h('span', { class: 'req', 'aria-hidden': 'true' }, ' *') : null);
    const field = h('div', { class: `field${type === 'checkbox' ? ' check' : ''}`, 'data-name': f.name },
      type === 'checkbox' ? [input, label] : [label, input],
      f.help ? h('p', { class: 'help', id: helpId }, f.help) : null,
      err);
    form.append(field);
    inputs.set(f.name, input);
    errs.set(f.name, err);
  }

  const message = h('p', { class: 'form-message', role: 'status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'primary', value: 'create' }, submitLabel);
  const check = validate ? h('button', { type: 'submit', value: 'validate', formnovalidate: true }, 'Validate') : null;
  form.append(h('div', { class: 'actions' }, submit, check), message);

  const ctl = {
    el: form,
    inputs,
    values() {
      const out = {};
      for (const [name, input] of inputs) {
        out[name] = input.type === 'checkbox' ? (input.checked ? '1' : '0') : input.value;
      }
      return out;
    },
    set(name, value) {
      const input = inputs.get(name);
      if (!input) return;
      if (input.type === 'checkbox') input.checked = Boolean(value) && value !== '0';
      else {
        if (input.tagName === 'SELECT' && ![...input.options].some((o) => o.value === value)) {
          input.append(h('option', { value }, value));
        }
        input.value = value;
      }
    },
    setErrors(errors) {
      const extra = [];
      for (const [name, el] of errs) {
        const text = errors && errors[name] ? String(errors[name]) : '';
        el.textContent = text;
        inputs.get(name).setAttribute('aria-invalid', text ? 'true' : 'false');
      }
      for (const [name, text] of Object.entries(errors || {})) {
        if (!errs.has(name)) extra.push(`${name}: ${text}`);
      }
      return extra;
    },
    setMessage(text, kind = 'info') {
      message.textContent = text || '';
      message.className = `form-message ${text ? kind : ''}`;
    },
    clear() {
      ctl.setErrors({});
      ctl.setMessage('');
    },
    focusFirstError() {
      for (const [name, el] of errs) {
        if (el.textContent) {
          inputs.get(name).focus();
          return;
        }
      }
    },
    /** Show the outcome of a failed submit: field errors next to fields, the rest as message. */
    showError(err) {
      const fieldErrors = err instanceof ApiError ? err.fieldErrors : null;
      if (fieldErrors) {
        const extra = ctl.setErrors(fieldErrors);
        const n = Object.keys(fieldErrors).length;
        ctl.setMessage(`${n} field${n === 1 ? '' : 's'} need${n === 1 ? 's' : ''} fixing${extra.length ? ` — ${extra.join('; ')}` : ''}`, 'bad');
        ctl.focusFirstError();
      } else {
        ctl.setErrors({});
        ctl.setMessage(errorText(err), 'bad');
      }
    },
  };

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const action = ev.submitter && ev.submitter.value === 'validate' ? 'validate' : 'create';
    if (!onSubmit) return;
    const buttons = form.querySelectorAll('button');
    buttons.forEach((b) => { b.disabled = true; });
    form.setAttribute('aria-busy', 'true');
    try {
      await onSubmit(ctl.values(), action, ctl);
    } catch (err) {
      ctl.showError(err);
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
      form.removeAttribute('aria-busy');
    }
  });
  return ctl;
}
