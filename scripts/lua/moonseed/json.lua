-- moonseed.json: decoding the JSON that Moonseed writes (control socket
-- replies, metrics.jsonl rows). Objects become tables, arrays become
-- sequences, null becomes json.null (a sentinel, so arrays keep their length).
--
--   local json = require "moonseed.json"
--   local row = json.decode('{"frames": 120, "loss": null}')
--   row.frames --> 120; row.loss == json.null --> true
--
-- Errors name the position: "json: expected ',' or '}' at character 17".

local json = {}

json.null = setmetatable({}, { __tostring = function() return "null" end })

local byte, sub, find, char = string.byte, string.sub, string.find, string.char
local tonumber, concat = tonumber, table.concat

local function fail(what, at)
  error(("json: %s at character %d"):format(what, at), 0)
end

local function skip(text, at)
  return (find(text, "[^ \t\r\n]", at)) or #text + 1
end

-- UTF-8 bytes of a code point.
local function utf8(code)
  if code < 0x80 then return char(code) end
  if code < 0x800 then
    return char(0xC0 + math.floor(code / 0x40), 0x80 + code % 0x40)
  end
  if code < 0x10000 then
    return char(0xE0 + math.floor(code / 0x1000), 0x80 + math.floor(code / 0x40) % 0x40, 0x80 + code % 0x40)
  end
  return char(0xF0 + math.floor(code / 0x40000), 0x80 + math.floor(code / 0x1000) % 0x40,
              0x80 + math.floor(code / 0x40) % 0x40, 0x80 + code % 0x40)
end

local escapes = { b = "\b", f = "\f", n = "\n", r = "\r", t = "\t", ['"'] = '"', ["\\"] = "\\", ["/"] = "/" }

local value -- forward

local function string_at(text, at)
  local parts, start = {}, at + 1
  local i = start
  while true do
    local c = byte(text, i)
    if c == nil then fail("unterminated string", at) end
    if c == 34 then -- "
      parts[#parts + 1] = sub(text, start, i - 1)
      return concat(parts), i + 1
    elseif c == 92 then -- backslash
      parts[#parts + 1] = sub(text, start, i - 1)
      local e = sub(text, i + 1, i + 1)
      if e == "u" then
        local hex = sub(text, i + 2, i + 5)
        local code = #hex == 4 and tonumber(hex, 16)
        if not code then fail("bad \\u escape", i) end
        i = i + 6
        if code >= 0xD800 and code <= 0xDBFF and sub(text, i, i + 1) == "\\u" then
          local low = tonumber(sub(text, i + 2, i + 5), 16)
          if low and low >= 0xDC00 and low <= 0xDFFF then
            code = 0x10000 + (code - 0xD800) * 0x400 + (low - 0xDC00)
            i = i + 6
          end
        end
        parts[#parts + 1] = utf8(code)
      else
        local r = escapes[e]
        if not r then fail("bad escape \\" .. e, i) end
        parts[#parts + 1] = r
        i = i + 2
      end
      start = i
    else
      i = i + 1
    end
  end
end

local function array_at(text, at)
  local out, n = {}, 0
  at = skip(text, at + 1)
  if sub(text, at, at) == "]" then return out, at + 1 end
  while true do
    local v
    v, at = value(text, at)
    n = n + 1
    out[n] = v
    at = skip(text, at)
    local c = sub(text, at, at)
    if c == "]" then return out, at + 1 end
    if c ~= "," then fail("expected ',' or ']'", at) end
    at = skip(text, at + 1)
  end
end

local function object_at(text, at)
  local out = {}
  at = skip(text, at + 1)
  if sub(text, at, at) == "}" then return out, at + 1 end
  while true do
    if sub(text, at, at) ~= '"' then fail("expected a string key", at) end
    local key
    key, at = string_at(text, at)
    at = skip(text, at)
    if sub(text, at, at) ~= ":" then fail("expected ':'", at) end
    local v
    v, at = value(text, skip(text, at + 1))
    out[key] = v
    at = skip(text, at)
    local c = sub(text, at, at)
    if c == "}" then return out, at + 1 end
    if c ~= "," then fail("expected ',' or '}'", at) end
    at = skip(text, at + 1)
  end
end

local literals = { ["true"] = true, ["false"] = false }

value = function(text, at)
  at = skip(text, at)
  local c = sub(text, at, at)
  if c == "{" then return object_at(text, at) end
  if c == "[" then return array_at(text, at) end
  if c == '"' then return string_at(text, at) end
  for word, v in pairs(literals) do
    if sub(text, at, at + #word - 1) == word then return v, at + #word end
  end
  if sub(text, at, at + 3) == "null" then return json.null, at + 4 end
  local s, e = find(text, "^-?%d+%.?%d*[eE]?[-+]?%d*", at)
  if s then
    local n = tonumber(sub(text, s, e))
    if n then return n, e + 1 end
  end
  if c == "" then fail("unexpected end", at) end
  fail("unexpected '" .. c .. "'", at)
end

function json.decode(text)
  if type(text) ~= "string" then error("json.decode expects a string, got " .. type(text), 2) end
  local v, at = value(text, 1)
  at = skip(text, at)
  if at <= #text then fail("trailing text", at) end
  return v
end

return json
