-- The declared-model helpers ms.nn.* and ms.layers (scripts/lua/moonseed/init.lua),
-- run by scripts_test.
local ms = require "moonseed"

local conv = ms.nn.conv2d(32, 8, 4)
assert(conv.kind == "conv2d" and conv.out == 32 and conv.kernel == 8 and conv.stride == 4 and conv.padding == nil)
local source, line, kind = ms.origin(conv)
assert(source:find("model_dsl_test.lua$") and line == 5 and kind == "conv2d",
  "a layer records its caller's line, got " .. tostring(source) .. ":" .. tostring(line))

local named = ms.nn.maxpool2d { kernel = 3, stride = 2, padding = 1 }
assert(named.kind == "maxpool2d" and named.kernel == 3 and named.stride == 2 and named.padding == 1)
local mixed = ms.nn.conv2d { 16, 3, padding = 1 }
assert(mixed.out == 16 and mixed.kernel == 3 and mixed.padding == 1 and mixed.stride == nil)
assert(ms.nn.relu().kind == "relu" and ms.nn.linear(64).out == 64 and ms.nn.lstm(256).out == 256)

local ok, err = pcall(ms.nn.linear, 64, 32)
assert(not ok and err:find("ms.nn.linear: too many arguments %(takes out%)"), tostring(err))
ok, err = pcall(ms.nn.relu, 1)
assert(not ok and err:find("ms.nn.relu: too many arguments %(takes none%)"), tostring(err))
ok, err = pcall(ms.nn.flatten, { 1 })
assert(not ok and err:find("too many positional arguments"), tostring(err))

-- The presets are the engine's own lists (models/torso.cc).
local nature = ms.nn.nature_cnn()
assert(#nature == 9, "nature_cnn has 9 layers, got " .. #nature)
assert(nature[1].kind == "conv2d" and nature[1].out == 32 and nature[1].kernel == 8 and nature[1].stride == 4)
assert(nature[#nature].kind == "relu" and nature[#nature - 1].kind == "linear" and nature[#nature - 1].out == 512)
local impala = ms.nn.impala_resnet()
assert(impala[1].kind == "impala_block" and impala[1].out == 16)
ok, err = pcall(require("moonseed.core").nn.preset, "mlp")
assert(not ok and err:find("not a preset"), tostring(err))

-- ms.layers flattens nested lists in order and keeps the model's other fields.
local model = ms.layers {
  ms.nn.nature_cnn(),
  ms.nn.linear(128), ms.nn.relu(),
  shared_torso = true,
}
assert(model.kind == "layers" and model.shared_torso == true)
assert(#model.layers == 11 and model.layers[10].out == 128 and model.layers[11].kind == "relu")
assert(select(2, ms.origin(model)) == 35, "ms.layers records its caller's line")
assert(select(2, ms.origin(model.layers[10])) == 37, "spliced layers keep their own lines")

ok, err = pcall(ms.layers, { ms.nn.relu(), kind = "mlp" })
assert(not ok and err:find('"kind" is set by ms.layers itself'), tostring(err))

-- A script's declared model loads into the engine's config as written.
local path = os.tmpname()
local file = assert(io.open(path, "w"))
file:write([[
local ms = require "moonseed"
return ms.experiment { model = ms.layers { ms.nn.linear(16), ms.nn.tanh(), "relu" } }
]])
file:close()
local loaded_ok, config = pcall(ms.load_experiment, path)
os.remove(path)
assert(loaded_ok, tostring(config))
assert(config.model.kind == "layers", tostring(config.model.kind))
assert(#config.model.layers == 3 and config.model.layers[1].kind == "linear" and config.model.layers[1].out == 16)
assert(config.model.layers[3].kind == "relu")

-- R2D2's Atari net: the Nature CNN then an LSTM of 512, spliceable like any preset.
local atari = ms.nn.r2d2_atari()
assert(#atari == #ms.nn.nature_cnn() + 1, "nature_cnn plus one layer, got " .. #atari)
assert(atari[#atari].kind == "lstm" and atari[#atari].out == 512)
local spliced = ms.layers { ms.nn.r2d2_atari() }
assert(#spliced.layers == #atari and spliced.layers[1].kind == "conv2d")

-- ms.r2d2 { ... } is a section (recorded where it was written); its functions stay callable.
local section = ms.r2d2 { burn_in = 4, trace = 8 }
assert(section.burn_in == 4 and section.trace == 8)
assert(select(2, ms.origin(section)) ~= nil, "ms.r2d2 records its caller's line")
assert(math.abs(ms.r2d2.value_rescale(3) - 1.003) < 1e-12)
