// Writes seed inputs for proto_fuzz into DIR: byte 0 selects the message
// (0 = v1::AgentMessage, 1 = v1::SubmitJobRequest), the rest is its wire form.
//   proto_seed DIR
#include <cstdio>
#include <fstream>
#include <string>

#include "iofleet/v1/agent.pb.h"
#include "iofleet/v1/controller.pb.h"

namespace {

int written = 0;

void Write(const std::string& dir, const std::string& name, char kind,
           const google::protobuf::Message& m) {
  std::string bytes(1, kind);
  bytes += m.SerializeAsString();
  std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
  ++written;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: proto_seed DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  using namespace iofleet::v1;

  AgentMessage hello;
  Hello* h = hello.mutable_hello();
  h->set_agent_name("node-7");
  h->set_protocol_version(1);
  h->set_min_protocol_version(1);
  h->set_enrolment_token("token");
  (*h->mutable_labels())["rack"] = "r1";
  (*h->mutable_labels())["disk"] = "nvme";
  h->add_allow_paths("/dev/nvme0n1");
  h->add_allow_paths("/mnt/scratch");
  h->add_running_runs("j0000000000ab-1");
  Inventory* inv = h->mutable_inventory();
  inv->set_hostname("node-7");
  inv->set_kernel_release("6.1.0-13-amd64");
  inv->set_cpu_model("AMD EPYC 7763");
  inv->set_cpu_count(64);
  inv->add_engines("io_uring");
  inv->add_engines("libaio");
  NumaNode* nn = inv->add_numa_nodes();
  nn->set_id(0);
  for (int c = 0; c < 8; ++c) nn->add_cpus(c);
  BlockDevice* bd = inv->add_block_devices();
  bd->set_name("nvme0n1");
  bd->set_model("Samsung SSD 980 PRO");
  bd->set_size_bytes(1000204886016ull);
  bd->set_logical_block_size(512);
  bd->set_numa_node(0);
  Write(dir, "hello.bin", 0, hello);

  AgentMessage old = hello;
  old.mutable_hello()->set_protocol_version(7);
  old.mutable_hello()->set_min_protocol_version(5);
  Write(dir, "hello_future_version.bin", 0, old);

  AgentMessage hb;
  hb.mutable_heartbeat()->set_unix_ms(1700000000000ull);
  hb.mutable_heartbeat()->add_running_runs("j0000000000ab-1");
  Write(dir, "heartbeat.bin", 0, hb);

  AgentMessage started;
  started.mutable_run_started()->set_run_id("j0000000000ab-1");
  started.mutable_run_started()->set_unix_ms(1700000000100ull);
  Write(dir, "run_started.bin", 0, started);

  AgentMessage iv;
  IntervalRecord* r = iv.mutable_interval();
  r->set_run_id("j0000000000ab-1");
  r->set_job_index(0);
  r->set_job_name("randread");
  r->set_seq(3);
  r->set_t_start_ms(3000);
  r->set_t_end_ms(4000);
  r->mutable_read()->set_ios(250000);
  r->mutable_read()->set_bytes(1024000000);
  for (uint32_t b = 100; b < 110; ++b) {
    r->mutable_read()->add_clat_bucket(b);
    r->mutable_read()->add_clat_count(b * 7);
  }
  r->mutable_read()->add_clat_bucket(200);  // one bucket without a count
  Write(dir, "interval.bin", 0, iv);

  AgentMessage fin;
  RunFinished* f = fin.mutable_run_finished();
  f->set_run_id("j0000000000ab-1");
  f->set_ok(true);
  f->set_last_seq_total(30);
  f->set_unix_ms(1700000030000ull);
  f->set_result_json(
      R"({"fio version":"iofleet-0.1.0","global options":{"ioengine":"io_uring"},)"
      R"("jobs":[{"jobname":"randread","groupid":0,"error":0,"job options":{"rw":"randread","bs":"4k"},)"
      R"("read":{"io_bytes":1048576000,"bw":34952,"iops":8738.1,"runtime":30000,"total_ios":256000,)"
      R"("clat_ns":{"min":1000,"max":900000,"mean":110000.5,"stddev":2000.1,)"
      R"("percentile":{"50.000000":100352,"99.000000":301056},"bins":{"100352":1200,"301056":15}}},)"
      R"("write":{"io_bytes":0,"iops":0,"total_ios":0,"clat_ns":{"min":0,"max":0,"mean":0}}}]})");
  Write(dir, "run_finished.bin", 0, fin);

  AgentMessage failed;
  failed.mutable_run_finished()->set_run_id("j1-2");
  failed.mutable_run_finished()->set_error("job \"w\": option \"filename\": refusing to write");
  failed.mutable_run_finished()->set_result_json("{\"jobs\": 5}");
  Write(dir, "run_failed.bin", 0, failed);

  SubmitJobRequest sub;
  JobSpec* s = sub.mutable_spec();
  s->set_name("ab");
  s->set_fio_text("[job]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\niodepth=16\n");
  s->add_hosts("node-7");
  s->set_repeat(2);
  (*s->mutable_tags())["branch"] = "main";
  Variant* va = s->add_variants();
  va->set_name("A");
  (*va->mutable_options())["ioengine"] = "io_uring";
  Variant* vb = s->add_variants();
  vb->set_name("B");
  (*vb->mutable_options())["ioengine"] = "libaio";
  *(*s->mutable_sweep())["iodepth"].add_values() = "1";
  *(*s->mutable_sweep())["iodepth"].add_values() = "32";
  (*(*s->mutable_host_overrides())["node-7"].mutable_options())["filename"] = "/dev/nvme0n1";
  Write(dir, "submit_ab.bin", 1, sub);

  SubmitJobRequest sel;
  sel.mutable_spec()->set_options_json(R"({"rw":"read","ioengine":"null","size":"1m"})");
  (*sel.mutable_spec()->mutable_selector())["rack"] = "r*";
  Write(dir, "submit_selector.bin", 1, sel);

  std::printf("wrote %d seeds to %s\n", written, dir.c_str());
  return 0;
}
