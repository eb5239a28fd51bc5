// Compiled only so that moonseed_torch_pch builds the precompiled header that
// every LibTorch target reuses (cmake/rooms.cmake).
