// What the console's SQL editor takes from CodeMirror 6; scripts/console-assets.sh bundles it
// into templates/docs/thirdparty/codemirror.js.
export { EditorView, basicSetup } from "codemirror";
export { keymap, placeholder } from "@codemirror/view";
export { EditorState, Compartment } from "@codemirror/state";
export { sql, PostgreSQL } from "@codemirror/lang-sql";
export { oneDark } from "@codemirror/theme-one-dark";
