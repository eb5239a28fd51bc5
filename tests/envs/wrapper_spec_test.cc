// Declared env wrappers as values (envs/wrappers/wrapper_spec.h): defaults, the rules and their
// messages, and the text form the Welcome carries, including text a hostile peer could send.
#include "envs/wrappers/wrapper_spec.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace moonseed::envs {
namespace {

WrapperSpec made(const std::string& kind, const std::vector<std::pair<std::string, double>>& given = {}) {
  WrapperSpec w;
  EXPECT_EQ(make_wrapper(kind, given, &w), "");
  return w;
}

TEST(WrapperSpec, FillsDefaultsInTheKindsOrder) {
  EXPECT_EQ(made("action_repeat").describe(), "action_repeat(k = 4, max_pool = -1)");
  EXPECT_EQ(made("action_repeat", {{"max_pool", 1}, {"k", 2}}).describe(), "action_repeat(k = 2, max_pool = 1)");
  EXPECT_EQ(made("clip_reward").describe(), "clip_reward(low = -1, high = 1)");
  EXPECT_EQ(made("sticky_actions").param("p"), 0.25);
  EXPECT_EQ(made("scale_obs").param("scale"), 1.0 / 255.0);
  EXPECT_EQ(made("frame_stack").param("n"), 4);
}

TEST(WrapperSpec, SaysWhatIsWrongWithAKindOrItsParameters) {
  WrapperSpec w;
  EXPECT_EQ(make_wrapper("frame_stak", {}, &w),
            "unknown wrapper \"frame_stak\"; did you mean \"frame_stack\"? (known: frame_stack, action_repeat, "
            "time_limit, clip_reward, sticky_actions, scale_obs)");
  EXPECT_EQ(make_wrapper("frame_stack", {{"m", 2}}, &w),
            "unknown parameter \"m\"; did you mean \"n\"? (frame_stack takes n)");
  EXPECT_EQ(make_wrapper("time_limit", {}, &w), "time_limit needs max_steps");
  EXPECT_EQ(make_wrapper("frame_stack", {{"n", 2}, {"n", 3}}, &w), "n is given twice");
}

TEST(WrapperSpec, ListProblemsNameTheWrappersPlace) {
  WrapperList list = {made("time_limit", {{"max_steps", 10}}), made("frame_stack", {{"n", 0}})};
  EXPECT_EQ(wrapper_list_problem(list), "env.wrappers[2] (frame_stack): n must be an integer in [1, 64], got 0");
  list[1] = made("frame_stack", {{"n", 2.5}});
  EXPECT_EQ(wrapper_list_problem(list), "env.wrappers[2] (frame_stack): n must be an integer in [1, 64], got 2.5");
  list[1] = made("clip_reward", {{"low", 1}, {"high", -1}});
  EXPECT_EQ(wrapper_list_problem(list), "env.wrappers[2] (clip_reward): low must not exceed high, got low = 1, high = -1");
  list[1] = made("scale_obs", {{"scale", 0}});
  EXPECT_EQ(wrapper_list_problem(list), "env.wrappers[2] (scale_obs): scale must not be 0");
  list[1] = made("sticky_actions", {{"p", 1.5}});
  EXPECT_EQ(wrapper_list_problem(list), "env.wrappers[2] (sticky_actions): p must be a number in [0, 1], got 1.5");
  list[0].params.clear();
  EXPECT_EQ(wrapper_list_problem(list), "env.wrappers[1] (time_limit): time_limit needs max_steps");
  EXPECT_EQ(wrapper_list_problem({}), "");
  EXPECT_EQ(wrapper_list_problem(WrapperList(kMaxWrappers + 1, made("clip_reward"))),
            "env.wrappers: at most 32 wrappers, got 33");
}

TEST(WrapperText, RoundTripsEveryKind) {
  const WrapperList list = {made("frame_stack", {{"n", 4}}), made("action_repeat", {{"k", 3}, {"max_pool", 0}}),
                            made("time_limit", {{"max_steps", 27000}}), made("clip_reward", {{"low", -0.5}}),
                            made("sticky_actions", {{"p", 0.1}}), made("scale_obs")};
  const std::string text = wrapper_list_text(list);
  EXPECT_EQ(text.substr(0, 45), "frame_stack n=4;action_repeat k=3 max_pool=0;");
  EXPECT_EQ(parse_wrapper_list(text), list);
  EXPECT_EQ(wrapper_list_text({}), "");
  EXPECT_TRUE(parse_wrapper_list("").empty());
}

TEST(WrapperText, RefusesHostileTextWithAMessage) {
  const auto refused = [](const std::string& text) {
    try {
      parse_wrapper_list(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused("frame_stack n=4;nope"), "env wrappers text: wrapper 2: unknown wrapper \"nope\" (known: "
                                             "frame_stack, action_repeat, time_limit, clip_reward, sticky_actions, "
                                             "scale_obs)");
  EXPECT_EQ(refused("frame_stack n"), "env wrappers text: wrapper 1: expected name=number, got \"n\"");
  EXPECT_EQ(refused("frame_stack n=4x"), "env wrappers text: wrapper 1: expected a finite number, got \"4x\"");
  EXPECT_EQ(refused("frame_stack n=nan"), "env wrappers text: wrapper 1: expected a finite number, got \"nan\"");
  EXPECT_EQ(refused("frame_stack n=1e999"), "env wrappers text: wrapper 1: expected a finite number, got \"1e999\"");
  EXPECT_EQ(refused("frame_stack n=100000"),
            "env wrappers text: wrapper 1: n must be an integer in [1, 64], got 100000");
  EXPECT_EQ(refused("time_limit"), "env wrappers text: wrapper 1: time_limit needs max_steps");
  EXPECT_EQ(refused(";"), "env wrappers text: wrapper 1: unknown wrapper \"\" (known: frame_stack, action_repeat, "
                          "time_limit, clip_reward, sticky_actions, scale_obs)");
  std::string many;
  for (int i = 0; i < 40; ++i) many += (i ? ";" : "") + std::string("clip_reward");
  EXPECT_EQ(refused(many), "env wrappers text: more than 32 wrappers (40)");
  EXPECT_EQ(refused(std::string(5000, 'x')), "env wrappers text: longer than 4096 characters (5000)");
  const std::string nul = refused(std::string("frame_stack\0 n=2", 16));
  EXPECT_EQ(nul.substr(0, 45), "env wrappers text: wrapper 1: unknown wrapper") << nul;
}

}  // namespace
}  // namespace moonseed::envs
