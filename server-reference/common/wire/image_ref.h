// SPDX-License-Identifier: Apache-2.0
#pragma once
// How an image reference resolves against what an agent offers, one rule for the scheduler
// (which agent may take a session) and the agent (which image it runs). A pure function.

#include <string>
#include <vector>

namespace bai::server {

/// Whether an image offered under `offered` (its name, "python", or an alias, "python:3.11",
/// or a pulled image's canonical name, "127.0.0.1:5000/lab/app:1") serves `reference`.
/// A registry reference (one with a "/") is served only by the image of that canonical name
/// ("lab/app" is "index.docker.io/lab/app:latest"), never by a local image of the same last
/// component. A local name's tag must match: exactly, or as "latest" (or no tag) for the
/// image's own name, or as a version with a platform suffix ("python:3.11-ubuntu22.04" is
/// served by "python:3.11"). So "python:3.9" is not served by an image that offers only
/// "python" and "python:3.11".
bool ImageServes(std::string const& offered, std::string const& reference);

/// Whether an agent offering `offered` (names and aliases) can run `reference` (ImageServes
/// for any of them). An agent that reported no images, or an empty reference, is not ruled out.
bool OffersImage(std::vector<std::string> const& offered, std::string const& reference);

}  // namespace bai::server
