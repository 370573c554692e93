//! The editor settings `crumb init` writes: yaml-language-server's schema mapping and `crumb lsp`
//! for VS Code (through the Generic LSP Client extension, `glspc`: VS Code has no LSP client
//! without an extension), a Neovim `.nvim.lua`, and Helix's `.helix/languages.toml`.

/// VS Code: the schema for yaml-language-server, and `crumb lsp` for YAML and Jinja files
/// through the Generic LSP Client extension.
pub(crate) const VSCODE_SETTINGS: &str = r#"{
  "yaml.schemas": {
    "./schemas/pipeline.schema.json": ["*.crumb.yaml", "pipelines/*.yaml"]
  },
  "glspc.server.command": "crumb",
  "glspc.server.commandArguments": ["lsp"],
  "glspc.server.languageId": ["yaml", "jinja"]
}
"#;

/// Neovim: reads `.nvim.lua` when 'exrc' is on (`:set exrc`, Neovim 0.9 and later); or run
/// `:luafile .nvim.lua`. Starts `crumb lsp` for the project's pipelines, presets and templates.
pub(crate) const NEOVIM: &str = r#"-- crumb lsp for this project's pipelines, presets, fragments and templates.
-- Neovim reads this file when 'exrc' is on (`:set exrc`, Neovim 0.9+); or run `:luafile .nvim.lua`.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h")
local config = { name = "crumb", cmd = { "crumb", "lsp" }, root_dir = root }
local started
local function attach(buf)
  local name = vim.api.nvim_buf_get_name(buf)
  local ours = name:sub(1, #root + 1) == root .. "/"
    and (name:match("%.ya?ml$") or name:match("%.j2$"))
  if not ours then
    return
  end
  if vim.lsp.start then
    vim.lsp.start(config, { bufnr = buf })
  else
    started = started or vim.lsp.start_client(config)
    vim.lsp.buf_attach_client(buf, started)
  end
end
vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile" }, {
  callback = function(args)
    attach(args.buf)
  end,
})
for _, buf in ipairs(vim.api.nvim_list_bufs()) do
  if vim.api.nvim_buf_is_loaded(buf) then
    attach(buf)
  end
end
"#;

/// Helix: project-local languages, `crumb lsp` beside yaml-language-server.
pub(crate) const HELIX: &str = r#"# crumb lsp for pipelines, presets and fragments (YAML) and their templates (Jinja).
[language-server.crumb]
command = "crumb"
args = ["lsp"]

[[language]]
name = "yaml"
language-servers = ["crumb", "yaml-language-server"]

[[language]]
name = "jinja"
language-servers = ["crumb"]
"#;
