-- Headless Neovim as a person's editor: open a broken pipeline, start `crumb lsp` (with
-- `vim.lsp.start`, the call `crumb init` writes, where this Neovim has it: 0.8 and later; with
-- `start_client` and `buf_attach_client` before), wait for the diagnostics and write them to a
-- file. Run as: CRUMB=… FILE=… OUT=… nvim --headless --clean -c "luafile nvim_smoke.lua"
local crumb, file, out = os.getenv("CRUMB"), os.getenv("FILE"), os.getenv("OUT")
vim.cmd("edit " .. vim.fn.fnameescape(file))
local buf = vim.api.nvim_get_current_buf()
local config = {
  name = "crumb",
  cmd = { crumb, "lsp" },
  root_dir = vim.fn.fnamemodify(file, ":h:h"),
}
local client
if vim.lsp.start then
  client = vim.lsp.start(config)
else
  client = vim.lsp.start_client(config)
  vim.lsp.buf_attach_client(buf, client)
end
local arrived = vim.wait(60000, function()
  return #vim.diagnostic.get(buf) > 0
end, 50)
local lines = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  table.insert(lines, string.format("%d:%d %s %s", d.lnum + 1, d.col + 1, tostring(d.code), d.message))
end
vim.fn.writefile(lines, out)
if client then
  vim.lsp.stop_client(client)
end
if not arrived then
  io.stderr:write("no diagnostics arrived\n")
  vim.cmd("cquit 1")
end
vim.cmd("qall!")
