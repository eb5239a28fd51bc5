// The files `moonseed launch` writes (cli/engine/launch.h), from given topologies: the Slurm batch
// script's srun lines, ranks, rendezvous and ports, checked by `bash -n`; the Kubernetes
// manifests read back by a real YAML parser (tests/cli/k8s_manifest_check.py under Debian's
// /usr/bin/python3), which must also refuse a copy with a broken selector.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "cli/engine/launch.h"

namespace moonseed::cli {
namespace {

LaunchPlan cartpole_plan() {
  LaunchPlan plan;
  plan.name = "cartpole-vtrace";
  plan.script = "/home/me/moonseed/examples/cartpole_vtrace.lua";
  plan.overrides = {"stop.frames=20000", "optimizer.lr=ms.linear(1e-3, 1e-4, 1e6)"};
  plan.learners = 2;
  plan.nodes = 2;
  plan.actors = 4;
  plan.output_dir = "/home/me/jobs";
  plan.workdir = "/home/me/moonseed";
  plan.auth_token_file = "/home/me/jobs/cartpole-vtrace.token";
  plan.moonseed = "/home/me/moonseed/build/moonseed";
  plan.image = "registry.example/moonseed:1.0";
  plan.time = "02:00:00";
  plan.partition = "gpu";
  return plan;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/launch_test_" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << text;
  return path;
}

// Exit code of `command` through /bin/sh, with its output in `output`.
int shell(const std::string& command, std::string* output = nullptr) {
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed");
  char buf[4096];
  std::string text;
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) text.append(buf, n);
  const int status = ::pclose(pipe);
  if (output) *output = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

TEST(SlurmScript, DeclaresTheJobFromTheTopology) {
  const std::string script = slurm_batch_script(cartpole_plan());
  EXPECT_EQ(script.rfind("#!/bin/bash\n", 0), 0u);
  EXPECT_TRUE(contains(script, "#SBATCH --job-name=cartpole-vtrace\n"));
  EXPECT_TRUE(contains(script, "#SBATCH --nodes=2\n"));
  EXPECT_TRUE(contains(script, "#SBATCH --ntasks=2\n"));
  EXPECT_TRUE(contains(script, "#SBATCH --ntasks-per-node=1\n"));
  EXPECT_TRUE(contains(script, "#SBATCH --cpus-per-task=1\n"));
  EXPECT_TRUE(contains(script, "#SBATCH --time=02:00:00\n"));
  EXPECT_TRUE(contains(script, "#SBATCH --partition=gpu\n"));
  EXPECT_TRUE(contains(script, "#SBATCH --output=/home/me/jobs/cartpole-vtrace-%j.out\n"));
  EXPECT_FALSE(contains(script, "hetjob"));
}

TEST(SlurmScript, RunsTheRanksAsOneStepWithRankWorldSizeAndRendezvous) {
  const std::string script = slurm_batch_script(cartpole_plan());
  EXPECT_EQ(count(script, "\nsrun "), 1u);
  EXPECT_TRUE(contains(script, "srun --nodes=2 --ntasks=2 --ntasks-per-node=1"));
  EXPECT_TRUE(contains(script, "scontrol show hostnames \"$SLURM_JOB_NODELIST\""));
  EXPECT_TRUE(contains(script, "export HEAD=${learner_hosts[0]}"));
  EXPECT_TRUE(contains(script, "run \"$SCRIPT\" --rank \"$SLURM_PROCID\" --world-size 2"));
  EXPECT_TRUE(contains(script, "--rendezvous \"tcp:$HEAD:29500\""));
  EXPECT_TRUE(contains(script, "--auth-token-file \"$TOKEN_FILE\""));
  EXPECT_TRUE(contains(script, "\"topology.listen=tcp:0.0.0.0:$((7000 + SLURM_PROCID))\""));
  EXPECT_FALSE(contains(script, "topology.local_actors=0"));  // each rank starts its share
  // Overrides reach every rank as words of their own, quoted once.
  EXPECT_TRUE(contains(script, "overrides=(stop.frames=20000 'optimizer.lr=ms.linear(1e-3, 1e-4, 1e6)')"));
  EXPECT_TRUE(contains(script, "rank \"${overrides[@]}\" &\n"));
  EXPECT_TRUE(contains(script, "wait_for \"$learners\""));
}

TEST(SlurmScript, OneLearnerRunsWithoutGroupFlags) {
  LaunchPlan plan = cartpole_plan();
  plan.learners = 1;
  plan.nodes = 1;
  const std::string script = slurm_batch_script(plan);
  EXPECT_TRUE(contains(script, "srun --nodes=1 --ntasks=1"));
  EXPECT_FALSE(contains(script, "--rank"));
  EXPECT_FALSE(contains(script, "--rendezvous"));
}

TEST(SlurmScript, ActorNodesMakeASecondStepWhereActorKConnectsToRankKModL) {
  LaunchPlan plan = cartpole_plan();
  plan.learners = 4;
  plan.nodes = 2;
  plan.actor_nodes = 3;
  plan.actors = 12;
  const std::string script = slurm_batch_script(plan);
  EXPECT_TRUE(contains(script, "#SBATCH hetjob\n#SBATCH --nodes=3\n#SBATCH --ntasks=12\n"));
  EXPECT_EQ(count(script, "\nsrun "), 2u);
  EXPECT_TRUE(contains(script, "srun --het-group=0 --nodes=2 --ntasks=4 --ntasks-per-node=2"));
  EXPECT_TRUE(contains(script, "topology.local_actors=0"));
  EXPECT_TRUE(contains(script, "srun --het-group=1 --nodes=3 --ntasks=12 --cpus-per-task=1"));
  EXPECT_TRUE(contains(script, "r=$((SLURM_PROCID % 4))"));
  EXPECT_TRUE(contains(script, "actor --connect \"tcp:${hosts[r / 2]}:$((7000 + r))\""));
  EXPECT_TRUE(contains(script, "scontrol show hostnames \"$SLURM_JOB_NODELIST_HET_GROUP_0\""));
  EXPECT_TRUE(contains(script, "wait_for \"$actors\""));
}

TEST(SlurmScript, ResumeRunsTheRunDirectoryInsteadOfTheScript) {
  LaunchPlan plan = cartpole_plan();
  plan.script = "";
  plan.resume_dir = "/home/me/moonseed/runs/cartpole_vtrace-20250101-120000";
  const std::string script = slurm_batch_script(plan);
  EXPECT_TRUE(contains(script, "export RESUME_DIR=/home/me/moonseed/runs/cartpole_vtrace-20250101-120000\n"));
  EXPECT_TRUE(contains(script, "run --resume \"$RESUME_DIR\" --rank \"$SLURM_PROCID\""));
  EXPECT_FALSE(contains(script, "$SCRIPT"));
}

TEST(SlurmScript, PassesBashSyntaxCheckWithAndWithoutActorNodes) {
  LaunchPlan plan = cartpole_plan();
  plan.overrides.push_back("name=it's \"quoted\" $(not run)");
  std::string output;
  EXPECT_EQ(shell("bash -n " + temp_file("plain.sbatch", slurm_batch_script(plan)), &output), 0) << output;
  plan.actor_nodes = 2;
  EXPECT_EQ(shell("bash -n " + temp_file("actors.sbatch", slurm_batch_script(plan)), &output), 0) << output;
}

TEST(LaunchPlan, RefusesPlansThatCannotStart) {
  auto refused = [](auto change) {
    LaunchPlan plan = cartpole_plan();
    change(plan);
    EXPECT_THROW(slurm_batch_script(plan), std::invalid_argument);
  };
  refused([](LaunchPlan& p) { p.nodes = 0; });
  refused([](LaunchPlan& p) { p.learners = 0; });
  refused([](LaunchPlan& p) { p.learners = 3; });  // 3 ranks over 2 nodes
  refused([](LaunchPlan& p) { p.actor_nodes = -1; });
  refused([](LaunchPlan& p) { p.rendezvous_port = 7001; });  // rank 1's actor port
  refused([](LaunchPlan& p) { p.actor_port = 65535; });       // rank 1 past the last port
  refused([](LaunchPlan& p) { p.partition = "gpu\n#SBATCH --x"; });
  refused([](LaunchPlan& p) { p.output_dir = "/home/me/my jobs"; });
  refused([](LaunchPlan& p) { p.resume_dir = "/runs/x"; });  // both a script and a run
}

TEST(Dns1123Name, LowercasesAndReplacesWhatALabelCannotHold) {
  EXPECT_EQ(dns1123_name("cartpole_vtrace"), "cartpole-vtrace");
  EXPECT_EQ(dns1123_name("  My Experiment!! v2 "), "my-experiment-v2");
  EXPECT_EQ(dns1123_name(std::string(80, 'a')).size(), 63u);
  EXPECT_EQ(dns1123_name("abc_def", 4), "abc");  // never ends on '-'
  EXPECT_THROW(dns1123_name("___"), std::invalid_argument);
}

class Manifests : public ::testing::Test {
 protected:
  std::string manifests(const std::string& token = "s3cret") {
    return k8s_manifests(cartpole_plan(), {{"cartpole_vtrace.lua", "return {\n  name = \"cartpole_vtrace\",\n}\n"}},
                         token);
  }
  // The checker's exit code on `text`, its output in `output`.
  int check(const std::string& name, const std::string& text, std::string* output) {
    return shell("/usr/bin/python3 " MOONSEED_K8S_CHECKER " " + temp_file(name, text), output);
  }
};

TEST_F(Manifests, HoldEveryPartNamedAfterTheExperiment) {
  const std::string yaml = manifests();
  EXPECT_TRUE(contains(yaml, "kind: Secret\nmetadata:\n  name: cartpole-vtrace-token\n"));
  EXPECT_TRUE(contains(yaml, "stringData:\n  token: \"s3cret\"\n"));
  EXPECT_TRUE(contains(yaml, "kind: ConfigMap\nmetadata:\n  name: cartpole-vtrace-experiment\n"));
  EXPECT_TRUE(contains(yaml, "  cartpole_vtrace.lua: |\n    return {\n      name = \"cartpole_vtrace\",\n    }\n"));
  EXPECT_TRUE(contains(yaml, "clusterIP: None"));
  EXPECT_TRUE(contains(yaml, "serviceName: cartpole-vtrace-learner\n  replicas: 2\n"));
  EXPECT_TRUE(contains(yaml, "RANK=${HOSTNAME##*-}"));
  EXPECT_TRUE(contains(yaml, "--rank \"$RANK\" --world-size 2 --rendezvous "
                             "tcp:cartpole-vtrace-learner-0.cartpole-vtrace-learner:29500"));
  EXPECT_TRUE(contains(yaml, "kind: Deployment\nmetadata:\n  name: cartpole-vtrace-actor\n"));
  EXPECT_TRUE(contains(yaml, "  replicas: 4\n"));
  EXPECT_TRUE(contains(yaml, "\"--connect\", \"tcp:cartpole-vtrace-learner-0.cartpole-vtrace-learner:7000\""));
  EXPECT_EQ(count(yaml, "name: MOONSEED_AUTH_TOKEN"), 2u);
  EXPECT_TRUE(contains(yaml, "            - \"optimizer.lr=ms.linear(1e-3, 1e-4, 1e6)\"\n"));
}

TEST_F(Manifests, WithoutATokenHoldAPlaceholderTheCommentAsksToReplace) {
  const std::string yaml = manifests("");
  EXPECT_TRUE(contains(yaml, "# PLACEHOLDER: replace the token"));
  EXPECT_TRUE(contains(yaml, "token: \"REPLACE-WITH-A-LONG-RANDOM-TOKEN\""));
}

TEST_F(Manifests, AreValidForAYamlParserAndTheChecksOfEachKind) {
  std::string output;
  EXPECT_EQ(check("good.k8s.yaml", manifests("a \"token\" with: yaml\ncharacters"), &output), 0) << output;
  EXPECT_TRUE(contains(output, "5 documents valid")) << output;
}

TEST_F(Manifests, CheckerRefusesACopyWhoseStatefulSetSelectorMissesItsPods) {
  std::string yaml = manifests();
  const size_t selector = yaml.find("    matchLabels:");
  const size_t label = yaml.find("component: learner", selector);
  ASSERT_NE(label, std::string::npos);
  yaml.replace(label, std::string("component: learner").size(), "component: learnr");
  std::string output;
  EXPECT_EQ(check("broken.k8s.yaml", yaml, &output), 1) << output;
  EXPECT_TRUE(contains(output, "does not match the template's labels")) << output;
}

TEST_F(Manifests, CheckerRefusesASecretKeyTheSecretLacks) {
  std::string yaml = manifests();
  const size_t key = yaml.find("key: token");
  yaml.replace(key, std::string("key: token").size(), "key: password");
  std::string output;
  EXPECT_EQ(check("badkey.k8s.yaml", yaml, &output), 1) << output;
  EXPECT_TRUE(contains(output, "reads key 'password'")) << output;
}

}  // namespace
}  // namespace moonseed::cli
