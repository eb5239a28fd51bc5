// Each actor's rate between two log ticks (cli/engine/actor_rates.cc), and the JSON
// `ctl status` holds under "actor_list".
#include "cli/engine/actor_rates.h"

#include <cmath>

#include <gtest/gtest.h>

namespace moonseed::cli {
namespace {

engine::ActorStatus actor(int32_t id, uint64_t frames, uint64_t connections, bool connected = true) {
  engine::ActorStatus a;
  a.id = id;
  a.connected = connected;
  a.host = "node-" + std::to_string(id);
  a.pid = 100 + id;
  a.frames = frames;
  a.connections = connections;
  if (connected) a.connected_s = 2.5;
  return a;
}

engine::ActorList list_of(std::vector<engine::ActorStatus> actors) {
  engine::ActorList list;
  list.actors = std::move(actors);
  return list;
}

TEST(ActorRates, ARateIsTheFramesOfTheLastIntervalOverItsSeconds) {
  ActorRates rates;
  rates.sample(list_of({actor(0, 100, 1), actor(3, 0, 1)}), 10);
  EXPECT_TRUE(std::isnan(rates.fps(actor(0, 100, 1)))) << "a connection's first sample has no rate";
  rates.sample(list_of({actor(0, 300, 1), actor(3, 50, 1)}), 12);
  EXPECT_EQ(rates.fps(actor(0, 300, 1)), 100);
  EXPECT_EQ(rates.fps(actor(3, 50, 1)), 25);
  EXPECT_EQ(rates.fps(actor(0, 999, 1)), 100) << "between ticks: the last interval's";
}

TEST(ActorRates, AnActorThatLeftOrCameBackHasNoRateUntilItsNextInterval) {
  ActorRates rates;
  rates.sample(list_of({actor(0, 100, 1), actor(1, 100, 1)}), 1);
  rates.sample(list_of({actor(0, 200, 1, false), actor(1, 150, 2)}), 2);
  EXPECT_TRUE(std::isnan(rates.fps(actor(0, 200, 1, false)))) << "not connected";
  EXPECT_TRUE(std::isnan(rates.fps(actor(1, 150, 2)))) << "a new connection since the last tick";
  EXPECT_TRUE(std::isnan(rates.fps(actor(1, 150, 3)))) << "reconnected after the tick";
  rates.sample(list_of({actor(0, 200, 2), actor(1, 250, 2)}), 4);
  EXPECT_TRUE(std::isnan(rates.fps(actor(0, 200, 2))));
  EXPECT_EQ(rates.fps(actor(1, 250, 2)), 50);
}

TEST(ActorRates, TheJsonListsEveryFieldWithNullForWhatIsNotKnown) {
  ActorRates rates;
  rates.sample(list_of({actor(0, 10, 1)}), 1);
  rates.sample(list_of({actor(0, 30, 1)}), 2);
  EXPECT_EQ(rates.json(list_of({actor(0, 30, 1), actor(1, 7, 1, false)})),
            "[{\"id\": 0, \"connected\": true, \"host\": \"node-0\", \"pid\": 100, \"frames\": 30, \"fps\": 20, "
            "\"connections\": 1, \"connected_s\": 2.5}, "
            "{\"id\": 1, \"connected\": false, \"host\": \"node-1\", \"pid\": 101, \"frames\": 7, \"fps\": null, "
            "\"connections\": 1, \"connected_s\": null}]");
  EXPECT_EQ(rates.json(engine::ActorList{}), "[]");
}

}  // namespace
}  // namespace moonseed::cli
