#pragma once

// `gpuforge init` (#33): what the live nodes' facts say the inventory should be, before anyone
// writes it. Nodes with the same hardware fingerprint (GPU model, count and slots; NIC kinds,
// rates, models and slots; NVMe drives; CPU; memory) become one profile. A smaller group that
// differs from a larger one in one or two of those parts is that group's outlier (a node with 7
// GPUs of 8, a 200G NIC among 400G ones, a missing DIMM): it gets a profile of its own that
// says how it differs, so the operator reads it first. Pure: facts in, a plain structure out;
// report/init_yaml.h writes it as YAML the loader reads back.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gpuforge/facts/drift.h"
#include "gpuforge/facts/fabric.h"

namespace gpuforge::facts {

struct DraftGpus {
  std::string model;        // the catalogue's name ("H200"), else one made from nvidia-smi's name
  bool in_catalogue = false;
  std::string reported;     // what identified it: "NVIDIA H200, PCI id 10de:2335, 143771 MiB"
  int count = 0;
  std::uint64_t memory_bytes = 0;  // per GPU as reported; written only for a model not in the catalogue
  double tdp_w = 0;                // max power limit; written only for a model not in the catalogue
  std::vector<std::string> pci;    // bus ids in GPU index order
  std::vector<int> numa;           // one per GPU; empty when any is unknown
  std::string source;              // "nvidia-smi" or "PCI bus (no NVIDIA driver answered)"
};

struct DraftNic {
  std::string name;        // RDMA device ("mlx5_0"), or the interface of an Ethernet NIC
  std::string kind;        // "infiniband" | "roce" | "ethernet"
  double rate_gbps = 0;
  std::string rate_source;  // "/sys/class/infiniband/mlx5_0/ports/1/rate: 400 Gb/sec (4X NDR)"
  int port = 1;
  std::string state;        // the port's state ("ACTIVE"), or "" for an Ethernet NIC with link
  std::string pci;          // "" when not known
  std::optional<int> numa;
  std::string netdev;       // "" when none
  std::string pci_id;       // "15b3:1021" (vendor:device), "" when not known
  std::string network;      // the network the draft puts it on ("ib", when the subnet lists it); ""
};

struct DraftCpu {
  std::string model;  // "" when lscpu's is not one the inventory accepts
  int sockets = 0;
  int cores_per_socket = 0;
  int threads_per_core = 1;
};

struct DraftProfile {
  std::string name;
  std::optional<DraftGpus> gpus;
  std::optional<DraftCpu> cpu;
  std::uint64_t memory_bytes = 0;  // what to write: MemTotal rounded up to a whole GiB; 0 unknown
  std::uint64_t memtotal_min = 0, memtotal_max = 0;  // MemTotal of its nodes, bytes
  int nvme_count = 0;
  std::uint64_t nvme_size = 0;  // the smallest drive
  std::vector<std::string> nvme_models;  // distinct models, for the comment
  std::vector<DraftNic> nics;
  std::vector<std::string> nodes;  // in the order given
  // For an outlier: the larger profile it differs from, and how ("6 GPUs (gpu[001-063]: 8)").
  std::string outlier_of;
  std::vector<std::string> differences;
  // What the nodes showed that the profile does not say, for comments: "eno2: no link, speed
  // unknown; not written".
  std::vector<std::string> left_out;
};

// A software version most nodes agree on, and the nodes that do not.
struct DraftVersion {
  std::string value;  // "" when no node reported one
  std::string source;
  std::vector<std::string> dissent;  // "gpu017: 550.54.15"
};

struct DraftSoftware {
  DraftVersion distro, os_version, driver, cuda, nccl, rdma_core, ofed, slurm;
};

// An LLDP neighbour a node reported on one of its NICs: a cable the inventory can name.
struct DraftLink {
  std::string node, nic;    // the NIC's name in its profile
  std::string chassis;      // the neighbour's system name (or chassis id)
  std::string port_id;      // as sent
  std::optional<int> port;  // the last number in the port name, when there is one
};

// A switch the subnet tools listed (#33 with #31's parsers), as the draft declares it.
struct DraftSwitch {
  std::string name;   // the description's host name where the inventory accepts it, else "ibsw-" and the GUID's tail
  std::string guid;   // node GUID ("0x" + 16 hex), written as an alias so cabling finds it; "" when not printed
  std::string desc;   // the node description as reported (a comment only)
  std::string model;  // from a "MF0;NAME:MODEL/U1" description, when the inventory accepts it; ""
  std::string tier;   // "leaf" (cabled to a node), "spine" (to a leaf), "core" (to switches only)
  int ports = 0;      // the highest port number the tool listed
  int cabled = 0;     // ports with a peer
  double port_rate_gbps = 0;  // the fastest rate an active port runs at; the fabric's when none
};

// One cable the subnet listed, between a drafted node's NIC and a switch port, or two switches.
struct DraftCable {
  std::string from, to;  // link ends: "gpu001:mlx5_0", "leaf01:7"
  std::string where;     // "iblinkinfo on gpu001:17": the line it was read from
};

// The InfiniBand fabric from one subnet view: a network, its switches and cables, and what was
// seen but not written (a device no drafted node owns, a port listed twice, a switch beyond
// 254 ports) with the line it came from.
struct DraftFabric {
  std::string source;       // "iblinkinfo on gpu001"
  std::string network = "ib";
  double rate_gbps = 0;     // the rate most of its drafted NICs report
  std::vector<DraftSwitch> switches;  // leaves, then spines, then core; by name within a tier
  std::vector<DraftCable> cables;     // node cables in node order, then switch cables
  std::vector<std::string> notes;
};

struct Draft {
  std::vector<DraftProfile> profiles;  // larger groups first; each outlier after the profile it differs from
  struct Node {
    std::string name;
    std::string profile;
  };
  std::vector<Node> nodes;  // in the order given
  struct Unreached {
    std::string node;
    std::string why;
  };
  std::vector<Unreached> unreached;
  DraftSoftware software;
  std::vector<DraftLink> links;
  std::optional<DraftFabric> fabric;  // with DraftSubnet
  std::vector<std::string> notes;
};

// The draft from every node's facts, in the order given; a node without facts is listed as
// unreached with its error, never invented.
Draft MakeDraft(std::span<const Gathered> gathered);

// The InfiniBand fabric from the subnet tools' views (iblinkinfo first; ibnetdiscover, when
// both are given, is cross-checked and each difference noted): each switch, and each cable
// whose ends are a switch port and either a NIC of a drafted node (by the HCA's port or node
// GUID from the node's facts, else rdma-ndd's "HOST DEVICE" description) or another switch.
// The NICs cabled are put on the fabric's network. Does nothing without a view.
void DraftSubnet(Draft& d, std::span<const Gathered> gathered, std::span<const IbSubnet> subnets);

// A NIC rate as the draft writes it ("400Gb/s", "53.125Gb/s"): never in exponent form, which
// the inventory's quantities do not read.
std::string RateText(double gbps);

// A drive size in the decimal units drives are sold in ("3.84TB", "960GB"), rounded down so the
// inventory never claims more than the drive has; never in exponent form.
std::string DriveSizeText(std::uint64_t bytes);

}  // namespace gpuforge::facts
