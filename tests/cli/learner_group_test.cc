#include "cli/engine/learner_group.h"

#include <unistd.h>

#include <cmath>
#include <chrono>
#include <filesystem>
#include <thread>

#include <gtest/gtest.h>

#include "engine/group/c10d_group.h"

namespace moonseed::cli {
namespace {

TEST(RankConfig, ActorsAreSpreadOverTheRanksTheLowerRanksTakingTheRest) {
  engine::ExperimentConfig group;
  group.topology.learners = 3;
  group.topology.actors = 8;
  group.topology.local_actors = 4;
  EXPECT_EQ(rank_config(group, 0).topology.actors, 3);
  EXPECT_EQ(rank_config(group, 1).topology.actors, 3);
  EXPECT_EQ(rank_config(group, 2).topology.actors, 2);
  EXPECT_EQ(rank_config(group, 0).topology.local_actors, 2);
  EXPECT_EQ(rank_config(group, 2).topology.local_actors, 1);
  group.topology.local_actors = -1;
  EXPECT_EQ(rank_config(group, 2).topology.local_actors, -1);  // all of the rank's own
}

TEST(RankListenAddress, RanksOnOneHostTakeThePortPlusTheirRank) {
  EXPECT_EQ(rank_listen_address("tcp:0.0.0.0:7000", 0), "tcp:0.0.0.0:7000");
  EXPECT_EQ(rank_listen_address("tcp:0.0.0.0:7000", 2), "tcp:0.0.0.0:7002");
  EXPECT_EQ(rank_listen_address("tcp:127.0.0.1:0", 1), "tcp:127.0.0.1:0");  // the kernel chooses each
  EXPECT_EQ(rank_listen_address("unix:/tmp/x.sock", 1), "unix:/tmp/x.sock");
}

TEST(GroupView, TheGroupsCountersAreSumsAndItsReturnWeighsEachRanksEpisodes) {
  engine::LearnerStats own;
  own.frames = 1000;
  own.group_frames = 1900;
  own.episodes = 10;
  own.return_mean = 100;
  own.actors_connected = 1;
  engine::LearnerStats other;
  other.frames = 1000;
  other.episodes = 30;
  other.return_mean = 200;
  other.actors_connected = 2;
  const std::vector<std::optional<std::string>> reports = {std::nullopt, rank_report(1, "b", other, 500)};
  const GroupView v = group_view(own, 400, "a", reports, 2);
  EXPECT_EQ(v.stats.frames, 2000);  // the reports' sum is newer than the agreed 1900
  EXPECT_EQ(v.stats.episodes, 40);
  EXPECT_EQ(v.stats.actors_connected, 3);
  EXPECT_DOUBLE_EQ(v.stats.return_mean, (100.0 * 10 + 200.0 * 30) / 40);
  EXPECT_DOUBLE_EQ(v.fps, 900);
  engine::MetricsRow row;
  v.add_columns(row);
  const std::string json = row.to_json();
  EXPECT_NE(json.find("\"rank1_frames\": 1000"), std::string::npos) << json;
  EXPECT_NE(json.find("\"learners_reporting\": 2"), std::string::npos) << json;
  ASSERT_EQ(v.ranks.size(), 2u);
  EXPECT_EQ(v.ranks[1].host, "b");
}

TEST(GroupView, ARankThatHasNotReportedIsLeftOutAndNoEpisodesGiveNoReturn) {
  engine::LearnerStats own;
  own.frames = 10;
  own.return_mean = std::nan("");
  const GroupView v = group_view(own, 1, "a", {std::nullopt, std::nullopt}, 2);
  EXPECT_EQ(v.ranks.size(), 1u);
  EXPECT_TRUE(std::isnan(v.stats.return_mean));
}

TEST(RankReport, ReadsBackItsSeqAndRefusesWhatIsTooLongForAReport) {
  engine::LearnerStats s;
  s.frames = 123;
  const std::optional<RankReport> r = parse_rank_report(rank_report(1, "host-b", s, 7, 42));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->seq, 42);
  EXPECT_EQ(r->frames, 123);
  EXPECT_EQ(r->host, "host-b");
  EXPECT_FALSE(parse_rank_report(rank_report(1, std::string(kMaxRankReportBytes, 'h'), s, 7, 1)).has_value());
  const std::optional<RankReport> long_host = parse_rank_report(rank_report(1, std::string(1000, 'h'), s, 7, 1));
  ASSERT_TRUE(long_host.has_value());
  EXPECT_EQ(long_host->host.size(), kMaxRankHostBytes);
}

TEST(RankReport, CarriesTheRanksActorAddressOnlyWhenItIsAnAddress) {
  engine::LearnerStats s;
  const std::optional<RankReport> r = parse_rank_report(rank_report(1, "b", s, 0, 1, "tcp:10.0.0.2:7001"));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->address, "tcp:10.0.0.2:7001");
  // Actors are sent where a report says: something that is not an address is dropped.
  EXPECT_EQ(parse_rank_report(rank_report(1, "b", s, 0, 1, "ftp://elsewhere"))->address, "");
  EXPECT_EQ(parse_rank_report(rank_report(1, "b", s, 0, 1))->address, "");
}

TEST(RankActorAddress, AWildcardHostIsReplacedByTheAddressOthersReachThisHostAt) {
  EXPECT_EQ(rank_actor_address("tcp:0.0.0.0:7001", "10.0.0.2"), "tcp:10.0.0.2:7001");
  EXPECT_EQ(rank_actor_address("tcp:[::]:7001", "10.0.0.2"), "tcp:10.0.0.2:7001");
  EXPECT_EQ(rank_actor_address("tcp:192.168.1.5:7001", "10.0.0.2"), "tcp:192.168.1.5:7001");
  EXPECT_EQ(rank_actor_address("unix:/run/r1/learner.sock", "10.0.0.2"), "unix:/run/r1/learner.sock");
}

// A report of rank `rank` with `actors` connected, taking actors at tcp:10.0.0.R:7000.
std::optional<RankReport> reporting(int rank, int actors) {
  RankReport r;
  r.rank = rank;
  r.actors = actors;
  r.address = "tcp:10.0.0." + std::to_string(rank) + ":7000";
  return r;
}

TEST(ActorPlacement, SendsEachActorToTheRankWithTheFewestAndKeepsItOnATie) {
  ActorPlacement placement(0);
  // Rank 0 has one actor, rank 1 none, rank 2 two; three slots each.
  placement.update({reporting(0, 1), reporting(1, 0), reporting(2, 2)}, {3, 3, 3});
  EXPECT_EQ(placement.choose(), std::optional<std::string>("tcp:10.0.0.1:7000"));
  // The one just sent counts before the next reports: rank 0 and 1 tie at one, rank 0 keeps it.
  EXPECT_EQ(placement.choose(), std::nullopt);
  EXPECT_EQ(placement.choose(), std::optional<std::string>("tcp:10.0.0.1:7000"));
  // All at two: this rank keeps it; then rank 0 is at three (full), ranks 1 and 2 at two.
  EXPECT_EQ(placement.choose(), std::nullopt);
  EXPECT_EQ(placement.choose(), std::optional<std::string>("tcp:10.0.0.1:7000"));
  EXPECT_EQ(placement.choose(), std::optional<std::string>("tcp:10.0.0.2:7000"));
  // Every slot taken: the actor stays, and this rank refuses it as a full learner does.
  EXPECT_EQ(placement.choose(), std::nullopt);
}

TEST(ActorPlacement, RanksThatHaveNotReportedOrGaveNoAddressAreLeftOut) {
  ActorPlacement placement(1);
  // Before any report this rank takes every actor itself.
  EXPECT_EQ(placement.choose(), std::nullopt);
  std::optional<RankReport> silent = reporting(2, 0);
  silent->address.clear();
  placement.update({std::nullopt, reporting(1, 4), silent}, {8, 8, 8});
  EXPECT_EQ(placement.choose(), std::nullopt);
  placement.update({reporting(0, 1), reporting(1, 4), silent}, {8, 8, 8});
  EXPECT_EQ(placement.choose(), std::optional<std::string>("tcp:10.0.0.0:7000"));
}

// A view of a 3-rank group in which ranks 0 and 1 have reported (rank 1's report number `seq`).
GroupView three_ranks(double seq) {
  engine::LearnerStats own, other;
  own.frames = 100;
  own.episodes = 4;
  own.return_mean = 10;
  own.optimizer_steps = 9;
  other.frames = 300;
  other.episodes = 4;
  other.return_mean = 30;
  other.optimizer_steps = 9;
  other.actors_connected = 2;
  return group_view(own, 5, "a", {std::nullopt, rank_report(1, "b", other, 15, static_cast<int64_t>(seq)), std::nullopt},
                    3);
}

TEST(GroupStatus, ListsEveryRankWithTheAgeOfItsReportAndMarksTheStaleOnes) {
  GroupStatus status;
  EXPECT_TRUE(status.empty());
  status.update(three_ranks(1), 10);
  ASSERT_FALSE(status.empty());
  EXPECT_EQ(status.ranks_json(11, 5),
            "[{\"rank\": 0, \"host\": \"a\", \"frames\": 100, \"fps\": 5, \"episodes\": 4, \"return_mean\": 10, "
            "\"optimizer_steps\": 9, \"actors\": 0, \"report_age_s\": 1, \"stale\": false}, "
            "{\"rank\": 1, \"host\": \"b\", \"frames\": 300, \"fps\": 15, \"episodes\": 4, \"return_mean\": 30, "
            "\"optimizer_steps\": 9, \"actors\": 2, \"report_age_s\": 1, \"stale\": false}, "
            "{\"rank\": 2, \"host\": \"\", \"frames\": null, \"fps\": null, \"episodes\": null, \"return_mean\": null, "
            "\"optimizer_steps\": null, \"actors\": null, \"report_age_s\": null, \"stale\": true}]");
  // Rank 1's report did not move for the next ticks: its age grows from when it was first seen.
  status.update(three_ranks(1), 14);
  status.update(three_ranks(1), 18);
  const std::string stale = status.ranks_json(18, 5);
  EXPECT_NE(stale.find("\"actors\": 0, \"report_age_s\": 0, \"stale\": false}"), std::string::npos) << stale;
  EXPECT_NE(stale.find("\"actors\": 2, \"report_age_s\": 8, \"stale\": true}"), std::string::npos) << stale;
  // A new report (the next seq) is fresh again, though its numbers are the same.
  status.update(three_ranks(2), 19);
  EXPECT_NE(status.ranks_json(19, 5).find("\"actors\": 2, \"report_age_s\": 0, \"stale\": false}"), std::string::npos);
}

TEST(GroupStatus, GivesRankZerosFreshStatsTheGroupsCounters) {
  GroupStatus status;
  status.update(three_ranks(1), 10);
  engine::LearnerStats fresh;
  fresh.frames = 150;
  fresh.optimizer_steps = 12;
  fresh.paused = true;
  const engine::LearnerStats s = status.with_group_counters(fresh);
  EXPECT_EQ(s.frames, 400);
  EXPECT_EQ(s.episodes, 8);
  EXPECT_DOUBLE_EQ(s.return_mean, 20);
  EXPECT_EQ(s.actors_connected, 2);
  EXPECT_EQ(s.optimizer_steps, 12);  // rank 0's own, as every rank steps together
  EXPECT_TRUE(s.paused);
  EXPECT_DOUBLE_EQ(status.view().fps, 20);
}

TEST(HmacSha256, MatchesThePublishedTestVector) {
  // RFC 4231, test case 2.
  EXPECT_EQ(hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

class SealedValuesTest : public ::testing::Test {
 protected:
  SealedValuesTest() {
    std::filesystem::remove(path_);
    engine::GroupOptions o;
    o.rendezvous = "file:" + path_;
    o.timeout_s = 1;
    group_ = std::make_unique<engine::C10dGroup>(o);
  }
  ~SealedValuesTest() override {
    group_->leave();
    group_.reset();
    std::filesystem::remove(path_);
  }
  const std::string path_ = ::testing::TempDir() + "/sealed-" + std::to_string(::getpid());
  std::unique_ptr<engine::C10dGroup> group_;
};

TEST_F(SealedValuesTest, AValueSignedWithTheTokenReadsBackAndIsSignedInTheStore) {
  SealedValues values(*group_, "secret");
  values.put("run_dir", "/runs/a");
  EXPECT_EQ(values.get("run_dir"), "/runs/a");
  EXPECT_EQ(group_->get("run_dir").rfind("hmac-sha256:", 0), 0u);
}

TEST_F(SealedValuesTest, AValueWrittenWithoutTheTokenIsRefusedNamingItsKey) {
  group_->put("config/2", "return { optimizer = { lr = 1 } }");  // someone with access to the store
  SealedValues values(*group_, "secret");
  try {
    values.get("config/2");
    FAIL() << "an unsigned value was taken";
  } catch (const engine::GroupError& e) {
    EXPECT_NE(std::string(e.what()).find("\"config/2\""), std::string::npos) << e.what();
  }
  SealedValues other(*group_, "another token");
  other.put("run_dir", "/elsewhere");
  EXPECT_THROW(values.get("run_dir"), engine::GroupError);
  // Nor can a signed value be moved under another key.
  values.put("resume_checkpoint", "/runs/a/ckpt.pt");
  group_->put("run_dir", group_->get("resume_checkpoint"));
  EXPECT_THROW(values.get("run_dir"), engine::GroupError);
}

TEST_F(SealedValuesTest, AReportThatFailsItsSignatureCountsAsNone) {
  SealedValues values(*group_, "secret");
  // Reports travel with the watchdog's beats: wait for the one published to come back.
  const auto read_back = [&](const std::string& raw) {
    for (int i = 0; i < 100; ++i) {
      const std::vector<std::optional<std::string>> all = group_->reports();
      if (all.at(0) == std::optional<std::string>(raw)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  group_->publish_report("{\"frames\": 1e12}");
  ASSERT_TRUE(read_back("{\"frames\": 1e12}"));
  EXPECT_FALSE(values.reports().at(0).has_value());
  values.publish_report("{\"frames\": 5}");
  for (int i = 0; i < 100 && !values.reports().at(0).has_value(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(values.reports().at(0), std::optional<std::string>("{\"frames\": 5}"));
}

}  // namespace
}  // namespace moonseed::cli
