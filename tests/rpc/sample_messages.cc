#include "tests/rpc/sample_messages.h"

#include <string>

namespace moonseed::rpc::testing {

Hello sample_hello() {
  Hello hello;
  hello.protocol_version = kProtocolVersion;
  hello.actor_id = 7;
  hello.host = "actor-host.example";
  hello.pid = 4242;
  hello.auth_token = "s3cret-token";
  return hello;
}

Welcome sample_welcome() {
  Welcome welcome;
  welcome.run_id = "cartpole-20240101-120000";
  welcome.actor_id = 7;
  welcome.env_id = "CartPole-v1";
  welcome.env_options = {{"gravity", 9.8}, {"length", 0.5}, {"sutton_barto_reward", 1.0}};
  welcome.env_files.model = "/srv/models/walker.xml";
  welcome.env_files.plugin = "/srv/plugins/libwalker.so";
  welcome.env_files.python = "walkers.bipedal:make_env";
  welcome.env_wrappers = "frame_stack n=4;time_limit max_steps=100";
  welcome.env_spec.id = "CartPole-v1";
  welcome.env_spec.observation.kind = envs::SpaceKind::kBox;
  welcome.env_spec.observation.dtype = envs::DType::kFloat32;
  welcome.env_spec.observation.shape = {4};
  welcome.env_spec.observation.low = {-4.8f, -3.4e38f, -0.418f, -3.4e38f};
  welcome.env_spec.observation.high = {4.8f, 3.4e38f, 0.418f, 3.4e38f};
  welcome.env_spec.action.kind = envs::SpaceKind::kDiscrete;
  welcome.env_spec.action.dtype = envs::DType::kUInt8;
  welcome.env_spec.action.n = 2;
  welcome.env_spec.max_episode_steps = 500;
  welcome.num_envs = 64;
  welcome.num_groups = 2;
  welcome.seed = 0x123456789abcdef0ull;
  welcome.config_version = 3;
  welcome.unroll_length = 20;
  welcome.payload = std::string("moonseed-actor-config 1\n\0\xfe", 26);
  return welcome;
}

StepBatch sample_step_batch(uint64_t seq, uint32_t count, uint32_t obs_bytes) {
  StepBatch batch;
  batch.seq = seq;
  batch.env_begin = 32;
  batch.count = count;
  batch.config_version = 5;
  batch.observations.resize(size_t{count} * obs_bytes);
  for (size_t i = 0; i < batch.observations.size(); ++i) {
    batch.observations[i] = static_cast<uint8_t>(i * 31 + seq);
  }
  for (uint32_t i = 0; i < count; ++i) {
    batch.rewards.push_back(0.25f * static_cast<float>(i) - 1.0f);
    batch.flags.push_back(static_cast<uint8_t>(i % 3 == 0 ? envs::kFirst : i % 3 == 1 ? envs::kTerminated
                                                                               : envs::kTruncated));
  }
  return batch;
}

ActionBatch sample_action_batch(uint64_t seq, uint32_t count) {
  ActionBatch batch;
  batch.seq = seq;
  batch.actions.resize(size_t{count} * 4);
  for (size_t i = 0; i < batch.actions.size(); ++i) {
    batch.actions[i] = static_cast<uint8_t>(i * 7 + 1);
  }
  return batch;
}

ConfigUpdate sample_config_update() {
  ConfigUpdate update;
  update.config_version = 9;
  update.payload = std::string("epsilon=0.1\0binary\xff\x01", 21);
  return update;
}

Bye sample_bye() { return Bye{"learner stopping: checkpoint written", /*reconnect=*/false, /*redirect=*/""}; }

ActorNotice sample_actor_notice() {
  return ActorNotice{4, "reward_shaping failed at exp.lua:12: attempt to index a nil value; keeping the previous function"};
}

std::vector<Message> all_sample_messages() {
  return {sample_hello(),          sample_welcome(),        sample_step_batch(11, 3),
          sample_action_batch(11, 3), sample_config_update(), sample_bye(),
          sample_actor_notice()};
}

std::vector<std::vector<uint8_t>> sample_frames() {
  std::vector<std::vector<uint8_t>> frames;
  std::vector<uint8_t> stream;
  for (const auto& message : all_sample_messages()) {
    std::vector<uint8_t> frame;
    encode(message, frame);
    stream.insert(stream.end(), frame.begin(), frame.end());
    frames.push_back(frame);
    for (size_t words : {2, 3, 8}) {
      detail::encode_in_small_segments(message, words, frame);
      frames.push_back(frame);
    }
  }
  frames.push_back(encode(sample_step_batch(1, 64, 16)));
  frames.push_back(stream);
  return frames;
}

}  // namespace moonseed::rpc::testing
