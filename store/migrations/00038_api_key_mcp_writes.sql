-- +goose Up
-- An API key may change data through the Model Context Protocol server only when made with
-- mcp_writes (and the server allows MCP writes at all): agents are read-only by default.
ALTER TABLE platform.api_keys ADD COLUMN mcp_writes boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE platform.api_keys DROP COLUMN mcp_writes;
