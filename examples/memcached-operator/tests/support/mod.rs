// Copyright 2026 The memcached-operator Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//! Helpers shared by the integration tests.
//!
//! Every `tests/*.rs` file that declares `mod support;` compiles its own copy of this module and
//! usually calls only part of it, so unused items are expected here rather than dead code.
#![allow(dead_code, unused_imports)]

pub mod apiserver;
pub mod envtest;
pub mod https;
pub mod requests;
pub mod workloads;

pub use apiserver::*;
pub use envtest::{Backend, ControlPlane, TestEnv};
pub use requests::{Request, RequestLog, Verb};
