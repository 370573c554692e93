-- Headless Neovim as a person's editor, after the project's `.nvim.lua` (what `crumb init`
-- writes) started `crumb lsp` for the open pipeline: wait for its diagnostics and write them to
-- $OUT, one a line. Run as: nvim --headless --clean FILE -c "luafile .nvim.lua" -c "luafile nvim_smoke.lua"
local out = os.getenv("OUT")
local buf = vim.api.nvim_get_current_buf()
local arrived = vim.wait(60000, function()
  return #vim.diagnostic.get(buf) > 0
end, 50)
local lines = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  table.insert(lines, string.format("%d:%d %s %s", d.lnum + 1, d.col + 1, tostring(d.code), d.message))
end
vim.fn.writefile(lines, out)
for _, client in ipairs(vim.lsp.get_active_clients()) do
  client.stop()
end
if not arrived then
  io.stderr:write("no diagnostics arrived\n")
  vim.cmd("cquit 1")
end
vim.cmd("qall!")
