-- moonseed.r2d2 on hand-computed cases (REFERENCE.md, section R2D2), run by scripts_test.
local ms = require "moonseed"
local r2d2 = ms.r2d2

local function near(a, b) return math.abs(a - b) < 1e-9 * (1 + math.abs(b)) end
local function check(got, want, what)
  assert(#got == #want, what .. ": length " .. #got .. ", want " .. #want)
  for i = 1, #want do
    assert(near(got[i], want[i]), ("%s[%d] = %.12g, want %.12g"):format(what, i, got[i], want[i]))
  end
end
local function fails_with(text, f, ...)
  local ok, err = pcall(f, ...)
  assert(not ok, "expected an error containing " .. text)
  assert(tostring(err):find(text, 1, true), tostring(err))
end

-- h(x) = sign(x) (sqrt(|x| + 1) - 1) + eps x: h(3) = 1 + 0.003, h(-8) = -2 - 0.008.
assert(r2d2.value_rescale(0) == 0)
assert(near(r2d2.value_rescale(3), 1.003))
assert(near(r2d2.value_rescale(3, 0.1), 1.3))
check(r2d2.value_rescale { 0, 3, -8, 99 }, { 0, 1.003, -2.008, 9.099 }, "value_rescale")
check(r2d2.inverse_value_rescale { 0, 1.003, -2.008 }, { 0, 3, -8 }, "inverse_value_rescale")
assert(near(r2d2.inverse_value_rescale(r2d2.value_rescale(1234.5)), 1234.5))
fails_with("number or array", r2d2.value_rescale, "3")

-- n = 3, gamma = 0.5, bootstrap values v_s = 10, 20, ..., 60 handed over in h-space.
local bootstrap_q = r2d2.value_rescale { 10, 20, 30, 40, 50, 60 }
local function h_of(y)
  local out = {}
  for i, v in ipairs(y) do out[i] = r2d2.value_rescale(v) end
  return out
end

-- No episode end; the last steps use shorter returns:
--   y_0 = 1 + 0.5*2 + 0.25*3 + 0.125*40 = 7.75 ... y_3 = 4 + 0.5*5 + 0.25*60 = 21.5, y_4 = 5 + 0.5*60 = 35.
local plain = r2d2.n_step_targets {
  rewards = { 1, 2, 3, 4, 5, 6 }, terminated = { 0, 0, 0, 0, 0, 0 }, bootstrap_q = bootstrap_q, n = 3, gamma = 0.5,
}
check(plain.targets, h_of { 7.75, 10.75, 13.75, 21.5, 35, 0 }, "plain targets")
check(plain.mask, { 1, 1, 1, 1, 1, 0 }, "plain mask")

-- a_1 terminates (x_2 is the final observation, invalid): y_0 = 1 + 0.5*2 = 2, y_1 = 2.
local ended = r2d2.n_step_targets {
  rewards = { 1, 2, 100, 4, 5, 6 }, terminated = { 0, 1, 0, 0, 0, 0 }, valid = { 1, 1, 0, 1, 1, 1 },
  bootstrap_q = bootstrap_q, n = 3, gamma = 0.5,
}
check(ended.targets, h_of { 2, 2, 0, 21.5, 35, 0 }, "terminated targets")
check(ended.mask, { 1, 1, 0, 1, 1, 0 }, "terminated mask")

-- a_1 is truncated: bootstrap from the final observation x_2 (v = 30):
--   y_0 = 1 + 0.5*2 + 0.25*30 = 9.5, y_1 = 2 + 0.5*30 = 17.
local truncated = r2d2.n_step_targets {
  rewards = { 1, 2, 100, 4, 5, 6 }, terminated = { 0, 0, 0, 0, 0, 0 }, truncated = { 0, 1, 0, 0, 0, 0 },
  valid = { 1, 1, 0, 1, 1, 1 }, bootstrap_q = bootstrap_q, n = 3, gamma = 0.5,
}
check(truncated.targets, h_of { 9.5, 17, 0, 21.5, 35, 0 }, "truncated targets")

-- Priorities over the trace after burn-in 1: |delta| = {1, 2, 2} -> 0.9 * 2 + 0.1 * 5/3;
-- with step 3 masked: |delta| = {4, 2} -> 0.9 * 4 + 0.1 * 3.
assert(near(r2d2.priorities { targets = { 9, 1, 2, 3 }, q_taken = { 0, 0, 0, 1 }, burn_in = 1 }, 1.8 + 0.5 / 3))
assert(near(r2d2.priorities {
  targets = { 0, 4, 0, 1 }, q_taken = { 5, 0, 7, -1 }, mask = { 1, 1, 0, 1 }, burn_in = 1,
}, 3.9))
assert(r2d2.priorities { targets = { 9, 1 }, q_taken = { 0, 0 }, mask = { 1, 0 }, burn_in = 1 } == 0)

-- Ape-X exploration: 0.4 for env 0, 0.4^8 for the last, 0.4 when there is one env.
assert(near(r2d2.ape_x_epsilon(0, 8), 0.4))
assert(near(r2d2.ape_x_epsilon(7, 8), 0.4 ^ 8))
assert(near(r2d2.ape_x_epsilon(0, 1), 0.4))
fails_with("outside [0, 8)", r2d2.ape_x_epsilon, 8, 8)

-- Misspelled fields, bad counts and mismatched lengths are errors that say what is wrong.
fails_with("did you mean 'gamma'?", r2d2.n_step_targets,
  { rewards = { 1, 2 }, terminated = { 0, 0 }, bootstrap_q = { 0, 0 }, gama = 0.5 })
fails_with("did you mean 'burn_in'?", r2d2.priorities, { targets = { 1 }, q_taken = { 0 }, burnin = 1 })
fails_with("'n' must be a whole number", r2d2.n_step_targets,
  { rewards = { 1, 2 }, terminated = { 0, 0 }, bootstrap_q = { 0, 0 }, n = 2.5 })
fails_with("missing array 'bootstrap_q'", r2d2.n_step_targets, { rewards = { 1, 2 }, terminated = { 0, 0 } })
fails_with("terminated has length 1", r2d2.n_step_targets,
  { rewards = { 1, 2 }, terminated = { 0 }, bootstrap_q = { 0, 0 } })
