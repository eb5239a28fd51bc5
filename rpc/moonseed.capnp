# The actor-learner wire protocol. Every message on a stream is one `Frame` in
# Cap'n Proto's standard stream framing. The plain C++ mirror is rpc/messages.h;
# rpc/codec.cc is the only place that translates between the two.
#
# Evolution: fields are only ever appended (new ordinals), so a new learner can
# read an old actor's frames; incompatible changes bump kProtocolVersion.
@0xa5e7762c6c8c2133;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("moonseed::rpc::wire");

enum SpaceKind {
  discrete @0;
  box @1;
}

enum DType {
  float32 @0;
  uint8 @1;
}

struct Space {
  kind @0 :SpaceKind;
  dtype @1 :DType;
  n @2 :Int64;
  shape @3 :List(Int64);
  low @4 :List(Float32);
  high @5 :List(Float32);
}

struct EnvSpec {
  id @0 :Text;
  observation @1 :Space;
  action @2 :Space;
  maxEpisodeSteps @3 :Int32;
}

struct Hello {
  protocolVersion @0 :UInt32;
  actorId @1 :Int32;
  host @2 :Text;
  pid @3 :Int32;
  authToken @4 :Text;
  anyRank @5 :Bool;  # a learner group may place this actor on another of its ranks (a Bye with redirect)
}

struct EnvOption {
  key @0 :Text;
  value @1 :Float64;
}

struct Welcome {
  runId @0 :Text;
  actorId @1 :Int32;
  envId @2 :Text;
  envOptions @3 :List(EnvOption);
  envSpec @4 :EnvSpec;
  numEnvs @5 :UInt32;
  numGroups @6 :UInt32;
  seed @7 :UInt64;
  configVersion @8 :UInt64;
  unrollLength @9 :UInt32;
  payload @10 :Data;  # as ConfigUpdate.payload
  envModel @11 :Text;  # env.model: the model file the env loads ("" = none; absent from older peers)
  envPlugin @12 :Text;  # env.plugin: the C plugin the actors load ("" = a built-in env; absent from older peers)
  envPython @13 :Text;  # env.python: MODULE:FUNCTION Python actors run ("" = not a Python env; absent from older peers)
  envWrappers @14 :Text;  # env.wrappers as envs::wrapper_list_text ("" = none; absent from older peers)
}

struct StepBatch {
  seq @0 :UInt64;
  envBegin @1 :UInt32;
  count @2 :UInt32;
  configVersion @3 :UInt64;
  observations @4 :Data;      # count * observation byte size, env-major
  rewards @5 :List(Float32);  # count
  flags @6 :Data;             # count, StepFlag bits
  envRewards @7 :List(Float32);  # empty, or count: the env's own rewards when shaping changed some
}

struct ActionBatch {
  seq @0 :UInt64;
  actions @1 :Data;
}

struct ConfigUpdate {
  configVersion @0 :UInt64;
  payload @1 :Data;  # opaque bytes, so any std::string survives unchanged
}

struct ActorNotice {
  configVersion @0 :UInt64;
  text @1 :Text;
}

struct Bye {
  reason @0 :Text;
  reconnect @1 :Bool;  # false: the run is over; true: connect again
  redirect @2 :Text;   # with reconnect: connect to this address instead (another rank of a learner group)
}

struct Frame {
  union {
    hello @0 :Hello;
    welcome @1 :Welcome;
    stepBatch @2 :StepBatch;
    actionBatch @3 :ActionBatch;
    configUpdate @4 :ConfigUpdate;
    bye @5 :Bye;
    actorNotice @6 :ActorNotice;
  }
}
