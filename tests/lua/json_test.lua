-- moonseed.json, the decoder of control replies and metrics.jsonl rows; run by scripts_test.
local json = require "moonseed.json"

local row = json.decode('{"time_s": 1.5, "frames": 120, "loss": null, "ok": true, "no": false}')
assert(row.time_s == 1.5 and row.frames == 120)
assert(row.loss == json.null and tostring(row.loss) == "null")
assert(row.ok == true and row.no == false)

local nested = json.decode(' { "a" : [1, -2.5e3, [], {}], "b": {"c": "d"} } ')
assert(#nested.a == 4 and nested.a[2] == -2500)
assert(next(nested.a[3]) == nil and next(nested.a[4]) == nil)
assert(nested.b.c == "d")

-- Arrays keep their length through nulls.
local with_null = json.decode("[1, null, 3]")
assert(#with_null == 3 and with_null[2] == json.null)

-- Escapes, including \u with a surrogate pair (U+1F600) and a 2-byte code point.
local s = json.decode('"a\\"b\\\\c\\n\\t\\u00e9\\ud83d\\ude00\\/"')
assert(s == 'a"b\\c\n\t\195\169\240\159\152\128/', s)

-- What the control socket answers.
local reply = json.decode('{"ok": false, "error": "reload refused (control), nothing changed:\\nmodel.hidden"}')
assert(reply.ok == false and reply.error:find("\nmodel.hidden", 1, true))

-- Errors name the position.
for text, message in pairs {
  ['{"a": 1'] = "expected ',' or '}' at character 8",
  ['[1 2]'] = "expected ',' or ']' at character 4",
  ['"open'] = "unterminated string at character 1",
  ['{"a": 1} x'] = "trailing text at character 10",
  ['{1: 2}'] = "expected a string key at character 2",
  [''] = "unexpected end at character 1",
} do
  local ok, err = pcall(json.decode, text)
  assert(not ok, text)
  assert(err == "json: " .. message, ("%q -> %s"):format(text, err))
end
print("json_test ok")
