/* The agent form's widgets (ai_agents/admin_agent_form.py). Each JSON block keeps its textarea,
   the "Avanzado" view and the one thing posted: the widgets are built from data-spec (labels
   already translated) and write the textarea on every change; editing the textarea rebuilds
   them. Without this script the textarea is the form. Also the "Probar conexión" button. */
(function () {
  "use strict";
  let uid = 0;

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => {
      if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : v);
    });
    [].concat(children || []).forEach((c) => node.append(c));
    return node;
  }

  function nextId() {
    uid += 1;
    return "agent-config-" + uid;
  }

  function chips(id, get, set, strings) {
    const list = el("ul", { class: "agent-config-chip-list" });
    const input = el("input", { type: "text", id: id, class: "agent-config-chip-input", autocomplete: "off" });
    function draw() {
      list.replaceChildren();
      (get() || []).forEach((text, i) => {
        const remove = el("button", {
          type: "button", class: "agent-config-chip-remove", "aria-label": strings.remove + " «" + text + "»",
        }, "×");
        remove.addEventListener("click", () => {
          const items = (get() || []).slice();
          items.splice(i, 1);
          set(items);
          draw();
          input.focus();
        });
        list.append(el("li", { class: "agent-config-chip" }, [el("span", {}, String(text)), remove]));
      });
    }
    function add() {
      const parts = input.value.split(/[,\n]/).map((s) => s.trim()).filter(Boolean);
      if (!parts.length) return;
      const items = (get() || []).slice();
      parts.forEach((p) => { if (!items.includes(p)) items.push(p); });
      set(items);
      input.value = "";
      draw();
    }
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === ",") {
        event.preventDefault();
        add();
      }
    });
    input.addEventListener("blur", add);
    draw();
    return { node: el("div", { class: "agent-config-chips" }, [list, input]), control: input };
  }

  function control(field, id, get, set) {
    const value = get();
    if (field.kind === "select") {
      const select = el("select", { id: id });
      const choices = field.choices.slice();
      if (value !== undefined && value !== null && !choices.some((c) => c[0] === value)) choices.push([value, value]);
      choices.forEach(([v, label]) => select.append(el("option", { value: v, selected: v === (value ?? "") }, label)));
      select.addEventListener("change", () => set(select.value === "" ? undefined : select.value));
      return select;
    }
    if (field.kind === "bool") {
      const box = el("input", { type: "checkbox", id: id, checked: Boolean(value) });
      box.addEventListener("change", () => set(box.checked));
      return box;
    }
    if (field.kind === "textarea") {
      const area = el("textarea", { id: id, rows: 3 });
      area.value = value ?? "";
      area.addEventListener("input", () => set(area.value === "" ? undefined : area.value));
      return area;
    }
    const numeric = field.kind === "int" || field.kind === "number";
    const input = el("input", numeric
      ? { type: "number", id: id, min: field.min, max: field.max, step: field.step, inputmode: "decimal" }
      : { type: "text", id: id });
    input.value = value ?? "";
    input.addEventListener("input", () => {
      const raw = input.value.trim();
      if (!numeric) return set(input.value);
      // Not a number: kept as typed, so the server names the field instead of dropping it.
      return set(raw === "" ? undefined : (Number.isNaN(Number(raw)) ? raw : Number(raw)));
    });
    return input;
  }

  function fieldRow(field, get, set, strings) {
    const id = nextId();
    const row = el("div", { class: "agent-config-field agent-config-kind-" + field.kind });
    const helpId = field.help ? id + "-help" : undefined;
    const label = el("label", { for: id }, field.label);
    let widget;
    if (field.kind === "chips") {
      const made = chips(id, get, set, strings);
      widget = made.node;
      if (helpId) made.control.setAttribute("aria-describedby", helpId);
    } else {
      widget = control(field, id, get, set);
      if (helpId) widget.setAttribute("aria-describedby", helpId);
    }
    if (field.kind === "bool") row.append(widget, label);
    else row.append(label, widget);
    if (helpId) row.append(el("p", { class: "agent-config-help", id: helpId }, field.help));
    return row;
  }

  function setter(obj, key, save) {
    return (v) => {
      if (v === undefined) delete obj[key];
      else obj[key] = v;
      save();
    };
  }

  function objectEditor(ui, spec, state, save) {
    if (!state || typeof state !== "object" || Array.isArray(state)) throw new Error("object");
    spec.fields.forEach((f) => ui.append(fieldRow(f, () => state[f.key], setter(state, f.key, save), spec)));
  }

  function toolsEditor(ui, spec, state, save) {
    if (!Array.isArray(state)) throw new Error("list");
    const options = spec.options.slice();
    state.forEach((name) => { if (!options.some((o) => o[0] === name)) options.push([name, name]); });
    options.forEach(([name, label]) => {
      const id = nextId();
      const box = el("input", { type: "checkbox", id: id, value: name, checked: state.includes(name) });
      box.addEventListener("change", () => {
        const at = state.indexOf(name);
        if (box.checked && at < 0) state.push(name);
        if (!box.checked && at >= 0) state.splice(at, 1);
        save();
      });
      ui.append(el("div", { class: "agent-config-field agent-config-kind-bool" }, [box, el("label", { for: id }, label)]));
    });
  }

  function listEditor(ui, spec, items, hooks) {
    const list = el("ol", { class: "agent-config-list" });
    const addButton = el("button", { type: "button", class: "agent-config-add" }, spec.add);
    function draw() {
      list.replaceChildren();
      items.forEach((item, i) => {
        const title = spec.item + " " + (i + 1);
        const remove = el("button", {
          type: "button", class: "agent-config-remove", "aria-label": spec.remove + ": " + title,
        }, spec.remove);
        remove.addEventListener("click", () => { items.splice(i, 1); hooks.save(); draw(); addButton.focus(); });
        const li = el("li", { class: "agent-config-item" }, [
          el("div", { class: "agent-config-item-head" }, [el("strong", {}, title), remove]),
        ]);
        hooks.render(li, item, draw);
        list.append(li);
      });
    }
    addButton.addEventListener("click", () => {
      items.push(hooks.fresh());
      hooks.save();
      draw();
      const first = list.lastElementChild && list.lastElementChild.querySelector("select, input, textarea");
      if (first) first.focus();
    });
    ui.append(list, addButton);
    draw();
  }

  function triggersEditor(ui, spec, state, save) {
    if (!Array.isArray(state)) throw new Error("list");
    state.forEach((t) => {
      if (!t || typeof t !== "object" || Array.isArray(t)) throw new Error("trigger");
      if (t.condition === undefined) {
        t.condition = {};
        Object.keys(t).forEach((k) => {
          if (!["type", "priority", "message", "condition"].includes(k)) { t.condition[k] = t[k]; delete t[k]; }
        });
      }
    });
    const typeField = { key: "type", label: spec.type_label, kind: "select", choices: spec.types.map((t) => [t.value, t.label]) };
    listEditor(ui, spec, state, {
      save: save,
      fresh: () => ({ type: "keyword", condition: { keywords: [] }, priority: "medium" }),
      render: (li, item, redraw) => {
        li.append(fieldRow(typeField, () => item.type, (v) => { item.type = v; item.condition = {}; save(); redraw(); }, spec));
        li.append(fieldRow(spec.priority, () => item.priority ?? "medium", setter(item, "priority", save), spec));
        const type = spec.types.find((t) => t.value === item.type);
        const condition = item.condition && typeof item.condition === "object" ? item.condition : (item.condition = {});
        (type ? type.fields : []).forEach((f) => li.append(fieldRow(f, () => condition[f.key], setter(condition, f.key, save), spec)));
        li.append(fieldRow(spec.message, () => item.message, setter(item, "message", save), spec));
      },
    });
  }

  function intentsEditor(ui, spec, state, save) {
    if (!state || typeof state !== "object" || Array.isArray(state)) throw new Error("object");
    if (!Array.isArray(state.intents)) state.intents = [];
    const mode = () => state.mode ?? state.method;
    ui.append(fieldRow(spec.mode, mode, (v) => { delete state.method; state.mode = v; save(); }, spec));
    listEditor(ui, spec, state.intents, {
      save: save,
      fresh: () => ({ intent: "", keywords: [], examples: [] }),
      render: (li, item) => {
        spec.fields.forEach((f) => li.append(fieldRow(f, () => item[f.key], setter(item, f.key, save), spec)));
      },
    });
  }

  const EDITORS = { object: objectEditor, tools: toolsEditor, triggers: triggersEditor, intents: intentsEditor };
  const EMPTY = { object: "{}", tools: "[]", triggers: "[]", intents: "{}" };

  function build(root, first) {
    const kind = root.dataset.agentConfig;
    const spec = JSON.parse(root.dataset.spec);
    const ui = root.querySelector(".agent-config-ui");
    const raw = root.querySelector(".agent-config-raw");
    const textarea = raw.querySelector("textarea");
    let note = root.querySelector(".agent-config-invalid");
    ui.replaceChildren();
    try {
      const state = JSON.parse(textarea.value.trim() || EMPTY[kind]);
      EDITORS[kind](ui, spec, state, () => { textarea.value = JSON.stringify(state, null, 2); });
    } catch (error) {
      ui.hidden = true;
      raw.open = true;
      if (!note) {
        note = el("p", { class: "agent-config-invalid", role: "status" }, spec.invalid);
        root.prepend(note);
      }
      return;
    }
    if (note) note.remove();
    ui.hidden = false;
    if (first) raw.open = false; // the widgets work: the JSON is one click away

  }

  function ping(button) {
    const status = button.parentElement.querySelector(".agent-model-ping-result");
    const token = document.querySelector("[name=csrfmiddlewaretoken]");
    const label = button.textContent;
    button.disabled = true;
    button.textContent = button.dataset.busy;
    status.textContent = "";
    status.className = "agent-model-ping-result";
    fetch(button.dataset.modelPing, {
      method: "POST", credentials: "same-origin", headers: { "X-CSRFToken": token ? token.value : "" },
    })
      .then((response) => response.json())
      .then((data) => {
        status.classList.add(data.ok ? "ok" : "error");
        status.textContent = data.message || data.error || "";
        if (data.detail) status.append(el("span", { class: "agent-model-ping-detail" }, data.detail));
      })
      .catch(() => { status.classList.add("error"); status.textContent = button.dataset.failed; })
      .finally(() => { button.disabled = false; button.textContent = label; });
  }

  function start() {
    document.querySelectorAll("[data-agent-config]").forEach((root) => {
      build(root, true);
      root.querySelector(".agent-config-raw textarea").addEventListener("change", () => build(root, false));
    });
    document.querySelectorAll("[data-model-ping]").forEach((button) => {
      button.addEventListener("click", () => ping(button));
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
