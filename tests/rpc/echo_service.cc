#include "tests/rpc/echo_service.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "tests/rpc/sample_messages.h"

namespace moonseed::rpc::testing {
namespace {

constexpr auto kPatience = std::chrono::seconds(10);

}  // namespace

ActionBatch echo_reply(const StepBatch& batch) {
  ActionBatch reply;
  reply.seq = batch.seq;
  reply.actions.resize(size_t{batch.count} * sizeof(int32_t));
  for (uint32_t i = 0; i < batch.count; ++i) {
    const auto action = static_cast<int32_t>(batch.seq * 1000 + batch.env_begin + i);
    std::memcpy(reply.actions.data() + i * sizeof(int32_t), &action, sizeof action);
  }
  return reply;
}

Admission EchoService::on_hello(const Hello& hello) {
  std::lock_guard<std::mutex> lock(mutex_);
  hellos_.push_back(hello);
  Admission admission;
  if (!refuse_reason_.empty()) {
    admission.reason = refuse_reason_;
    return admission;
  }
  if (!required_token_.empty() && hello.auth_token != required_token_) {
    admission.reason = "wrong auth token";
    admission.bad_credentials = true;
    return admission;
  }
  admission.accepted = true;
  admission.welcome = sample_welcome();
  admission.welcome.actor_id = next_actor_id_++;
  return admission;
}

void EchoService::require_token(std::string token) {
  std::lock_guard<std::mutex> lock(mutex_);
  required_token_ = std::move(token);
}

void EchoService::on_connect(std::shared_ptr<ActorLink> link) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++connects_;
  links_[link->actor_id()] = std::move(link);
  changed_.notify_all();
}

void EchoService::on_steps(const std::shared_ptr<ActorLink>& link, StepBatch&& batch) {
  link->send_actions(echo_reply(batch));
}

void EchoService::on_disconnect(const std::shared_ptr<ActorLink>& link, const std::string& reason) {
  const int32_t actor_id = link->actor_id();
  std::lock_guard<std::mutex> lock(mutex_);
  links_.erase(actor_id);
  disconnects_[actor_id] = reason;
  changed_.notify_all();
}

void EchoService::on_notice(const std::shared_ptr<ActorLink>& link, const ActorNotice& notice) {
  std::lock_guard<std::mutex> lock(mutex_);
  notices_.emplace(link->actor_id(), notice);
  changed_.notify_all();
}

ActorNotice EchoService::wait_for_notice(int32_t actor_id) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!changed_.wait_for(lock, kPatience, [&] { return notices_.count(actor_id) > 0; })) {
    ADD_FAILURE() << "actor " << actor_id << " sent no notice";
    return {};
  }
  return notices_[actor_id];
}

void EchoService::refuse_with(std::string reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  refuse_reason_ = std::move(reason);
}

std::shared_ptr<ActorLink> EchoService::wait_for_link(int32_t actor_id) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!changed_.wait_for(lock, kPatience, [&] { return links_.count(actor_id) > 0; })) {
    ADD_FAILURE() << "actor " << actor_id << " never connected";
    return nullptr;
  }
  return links_[actor_id];
}

std::string EchoService::wait_for_disconnect(int32_t actor_id) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!changed_.wait_for(lock, kPatience, [&] { return disconnects_.count(actor_id) > 0; })) {
    ADD_FAILURE() << "actor " << actor_id << " never disconnected";
    return "";
  }
  return disconnects_[actor_id];
}

std::vector<Hello> EchoService::hellos() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hellos_;
}

int EchoService::connects() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return connects_;
}

}  // namespace moonseed::rpc::testing
