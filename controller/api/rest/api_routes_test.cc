#include "controller/api/rest/api_routes.h"

#include <google/protobuf/descriptor.h>

#include <map>
#include <set>
#include <string>

#include "gtest/gtest.h"
#include "iofleet/v1/controller.grpc.pb.h"

namespace iofleet::controller::rest {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::MethodDescriptor;

// `outer` is `inner` or carries it in a field (a request body field, a
// response listing a stream's messages).
bool Carries(const Descriptor* outer, const std::string& inner) {
  if (outer->full_name() == inner) return true;
  for (int i = 0; i < outer->field_count(); ++i) {
    const FieldDescriptor* f = outer->field(i);
    if (f->message_type() != nullptr && f->message_type()->full_name() == inner) return true;
  }
  return false;
}

// The REST route table and the gRPC service cannot drift apart: every RPC has
// a route that names it, every named RPC exists, and each route decodes the
// RPC's request (or its body field) and answers with its response (or, for the
// stream, a message carrying its records).
TEST(ApiRoutesTest, EveryRpcHasOneRouteWithItsTypes) {
  const google::protobuf::ServiceDescriptor* svc =
      v1::ListJobsResponse::descriptor()->file()->FindServiceByName("ControllerService");
  ASSERT_NE(svc, nullptr);
  const std::vector<ApiRoute> routes = ControllerRoutes(nullptr);
  std::map<std::string, const ApiRoute*> by_rpc;
  std::set<std::string> paths;
  for (const ApiRoute& r : routes) {
    EXPECT_TRUE(paths.insert(r.method + " " + r.path).second) << "twice: " << r.path;
    EXPECT_TRUE(r.method == "GET" || r.method == "POST") << r.path;
    EXPECT_TRUE(r.handler) << r.path;
    if (r.rpc.empty()) continue;
    const MethodDescriptor* m = svc->FindMethodByName(r.rpc);
    ASSERT_NE(m, nullptr) << r.path << " names no RPC " << r.rpc;
    EXPECT_TRUE(by_rpc.emplace(r.rpc, &r).second) << r.rpc << " has two routes";
    EXPECT_TRUE(Carries(m->input_type(), r.request))
        << r.path << ": request " << r.request << " is not " << m->input_type()->full_name();
    if (!r.response.empty()) {
      const Descriptor* resp =
          google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(r.response);
      ASSERT_NE(resp, nullptr) << r.response;
      EXPECT_TRUE(Carries(resp, m->output_type()->full_name()))
          << r.path << ": response " << r.response << " is not " << m->output_type()->full_name();
    }
  }
  for (int i = 0; i < svc->method_count(); ++i) {
    EXPECT_TRUE(by_rpc.contains(svc->method(i)->name()))
        << "RPC " << svc->method(i)->name() << " has no REST route";
  }
}

}  // namespace
}  // namespace iofleet::controller::rest
