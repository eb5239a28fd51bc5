-- moonseed.vtrace.targets on hand-computed cases (REFERENCE.md formulas), run by scripts_test.
local ms = require "moonseed"

local function near(a, b) return math.abs(a - b) < 1e-9 end
local function check(got, want, what)
  assert(#got == #want, what .. ": length " .. #got)
  for i = 1, #want do
    assert(near(got[i], want[i]), ("%s[%d] = %.12g, want %.12g"):format(what, i, got[i], want[i]))
  end
end

-- On-policy, lambda = 1: the targets are n-step returns.
--   v_1 = 2 + 0.9 * 3 = 4.7;  v_0 = 1 + 0.9 * 4.7 = 5.23
--   A_0 = 1 + 0.9 * 4.7 - 0.5 = 4.73;  A_1 = 2 + 0.9 * 3 - 1 = 3.7
local on = ms.vtrace.targets {
  log_rhos = { 0, 0 }, discounts = { 0.9, 0.9 }, rewards = { 1, 2 }, values = { 0.5, 1.0 },
  bootstrap_value = 3,
}
check(on.vs, { 5.23, 4.7 }, "on-policy vs")
check(on.pg_advantages, { 4.73, 3.7 }, "on-policy pg_advantages")

-- Off-policy, rho = {2, 0.5}, clips 1: rho_bar = c = {1, 0.5}.
--   delta_1 = 0.5 * (2 + 2.7 - 1) = 1.85, v_1 = 2.85
--   delta_0 = 1 * (1 + 0.9 - 0.5) = 1.4, v_0 = 0.5 + 1.4 + 0.9 * 1 * 1.85 = 3.565
--   A_0 = 1 * (1 + 0.9 * 2.85 - 0.5) = 3.065, A_1 = 0.5 * (2 + 2.7 - 1) = 1.85
local off = ms.vtrace.targets {
  log_rhos = { math.log(2), math.log(0.5) }, discounts = { 0.9, 0.9 }, rewards = { 1, 2 },
  values = { 0.5, 1.0 }, bootstrap_value = 3, lambda = 1, rho_clip = 1, pg_rho_clip = 1, c_clip = 1,
}
check(off.vs, { 3.565, 2.85 }, "off-policy vs")
check(off.pg_advantages, { 3.065, 1.85 }, "off-policy pg_advantages")

-- A masked step (a final observation) has no TD error: v_1 = V_1 = 1, v_0 = 0.5 + 1.4 = 1.9.
local masked = ms.vtrace.targets {
  log_rhos = { 0, 0 }, discounts = { 0.9, 0.9 }, rewards = { 1, 2 }, values = { 0.5, 1.0 },
  bootstrap_value = 3, mask = { 1, 0 },
}
check(masked.vs, { 1.9, 1.0 }, "masked vs")

-- Misspelled parameters and mismatched lengths are errors.
local ok, err = pcall(ms.vtrace.targets, {
  log_rhos = { 0 }, discounts = { 1 }, rewards = { 1 }, values = { 0 }, bootstrap_value = 0, lamda = 0.5,
})
assert(not ok and err:find("did you mean 'lambda'", 1, true), tostring(err))
ok, err = pcall(ms.vtrace.targets, {
  log_rhos = { 0, 0 }, discounts = { 1 }, rewards = { 1, 1 }, values = { 0, 0 }, bootstrap_value = 0,
})
assert(not ok and err:find("discounts"), tostring(err))
