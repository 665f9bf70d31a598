//! Holds the Rust mirror (src/types.rs) and the built library against what a
//! C compiler makes of include/gni_pub.h: every constant's value, the size,
//! alignment and field offsets of every struct, a few function-like macros,
//! and the exported string tables as a linked C program sees them.
//!
//! Needs `cc` on PATH; without one the tests print why and pass.

#![allow(dead_code)]

#[path = "../src/types.rs"]
mod types;

use std::collections::BTreeMap;
use std::mem::{align_of, offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;
use types::*;

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

fn include_dir() -> PathBuf {
    Path::new(MANIFEST).join("../include")
}

/// A scratch directory per test, so tests can run in parallel.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ugni-layout-{}-{}", std::process::id(), name));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn have_cc() -> bool {
    match Command::new("cc").arg("--version").output() {
        Ok(o) if o.status.success() => true,
        _ => {
            eprintln!("skipped: no working `cc` on PATH");
            false
        }
    }
}

/// Compiles `src` against include/ with `extra` arguments, runs it with
/// `ld_path` as LD_LIBRARY_PATH and returns its stdout.
fn compile_and_run(name: &str, src: &str, extra: &[&str], ld_path: Option<&str>) -> String {
    let dir = scratch(name);
    let c = dir.join("t.c");
    let exe = dir.join("t");
    std::fs::write(&c, src).unwrap();
    let out = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(&c)
        .arg("-I")
        .arg(include_dir())
        .args(extra)
        .output()
        .expect("running cc");
    assert!(
        out.status.success(),
        "cc failed:\n{}\n--- source ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        src
    );
    let mut run = Command::new(&exe);
    if let Some(p) = ld_path {
        run.env("LD_LIBRARY_PATH", p);
    }
    let out = run.output().expect("running the C program");
    assert!(out.status.success(), "C program failed: {}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8(out.stdout).unwrap()
}

/// `key value` lines -> map.
fn parse(out: &str) -> BTreeMap<String, String> {
    out.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

// ---- constants --------------------------------------------------------------

macro_rules! consts {
    ($($name:ident),* $(,)?) => {
        const CONSTS: &[(&str, i128)] = &[$((stringify!($name), $name as i128)),*];
    };
}

// Every `pub const` of types.rs that the header also defines.
consts! {
    GNI_MAJOR_REV, GNI_MINOR_REV, GNI_CODE_REV, GNI_VERSION, GNI_VERSION_FMA_SHARING, GNI_PTAG_LND,
    GNI_PTAG_OFED, GNI_PTAG_USER_START, GNI_PTAG_LND_KNC, GNI_PTAG_USER_END, GNI_PTAG_HSNBOOT,
    GNI_PTAG_MAX, GNI_PTAG_LB, GNI_FIND_ALLOC_PTAG, GNI_PKEY_INVALID, GNI_PKEY_LND, GNI_PKEY_OFED,
    GNI_PKEY_USER_START, GNI_PKEY_USER_END, GNI_PKEY_HSNBOOT, GNI_PKEY_MAX, GNI_PKEY_LB,
    GNI_COOKIE_PKEY_MASK, GNI_COOKIE_PKEY_SHIFT, GNI_COOKIE_CBPS_MDD_MASK,
    GNI_COOKIE_CBPS_MDD_SHIFT, GNI_SMSG_ANY_TAG, FMA_SMSG_MAX_RETRANS_DEFAULT,
    GNI_CDM_MODE_FORK_NOCOPY, GNI_CDM_MODE_FORK_FULLCOPY, GNI_CDM_MODE_FORK_PARTCOPY,
    GNI_CDM_MODE_ERR_NO_KILL, GNI_CDM_MODE_ERR_ALL_KILL, GNI_CDM_MODE_FAST_DATAGRAM_POLL,
    GNI_CDM_MODE_BTE_SINGLE_CHANNEL, GNI_CDM_MODE_USE_PCI_IOMMU, GNI_CDM_MODE_MDD_DEDICATED,
    GNI_CDM_MODE_MDD_SHARED, GNI_CDM_MODE_DUAL_EVENTS, GNI_CDM_MODE_DLA_ENABLE_FORWARDING,
    GNI_CDM_MODE_DLA_DISABLE_FORWARDING, GNI_CDM_MODE_FMA_DEDICATED, GNI_CDM_MODE_FMA_SHARED,
    GNI_CDM_MODE_CACHED_AMO_ENABLED, GNI_CDM_MODE_CQ_NIC_LOCAL_PLACEMENT,
    GNI_CDM_MODE_FLBTE_DISABLE, GNI_CDM_MODE_FMA_SMALL_WINDOW, GNI_CDM_MODE_MASK,
    GNI_CDM_MODE_PRIV_RESERVED_1, GNI_CDM_MODE_PRIV_RESERVED_2, GNI_CDM_MODE_PRIV_RESERVED_3,
    GNI_CDM_MODE_PRIV_RESERVED_4, GNI_CDM_MODE_PRIV_MASK, GNI_MEM_READWRITE, GNI_MEM_READ_ONLY,
    GNI_MEM_USE_VMDH, GNI_MEM_USE_GART, GNI_MEM_PHYS_CONT, GNI_MEM_PHYS_SEGMENTS,
    GNI_MEM_STRICT_PI_ORDERING, GNI_MEM_PI_FLUSH, GNI_MEM_MDD_CLONE, GNI_MEM_RELAXED_PI_ORDERING,
    GNI_MEM_RESERVE_REGION, GNI_MEM_UPDATE_REGION, GNI_MEM_MDD_SHARED, GNI_MEM_MDD_DEDICATED,
    GNI_MEM_CUDA, GNI_CQ_NOBLOCK, GNI_CQ_BLOCKING, GNI_CQ_EMULATED, GNI_CQ_EMULATED_INVALID,
    GNI_CQ_PHYS_PAGES, GNI_CQ_UNMANAGED, GNI_CQ_EVENT_TYPE_POST, GNI_CQ_EVENT_TYPE_SMSG,
    GNI_CQ_EVENT_TYPE_DMAPP, GNI_CQ_EVENT_TYPE_MSGQ, GNI_FMA_FLAGGED_RESPONSE_SIZE,
    GNI_CE_FPE_OP_INVAL, GNI_CE_FPE_OFLOW, GNI_CE_FPE_UFLOW, GNI_CE_FPE_PRECISION,
    GNI_CE_MODE_ROUND_UP, GNI_CE_MODE_ROUND_DOWN, GNI_CE_MODE_ROUND_NEAR, GNI_CE_MODE_ROUND_ZERO,
    GNI_CE_MODE_CQE_ONCOMP, GNI_CE_MODE_CQE_ONERR, GNI_CE_MODE_RC_NMIN_HASH,
    GNI_CE_MODE_RC_MIN_HASH, GNI_CE_MODE_RC_MNON_HASH, GNI_CE_MODE_RC_ADAPT, GNI_CE_MAX_CHILDREN,
    GNI_CEMODE_TWO_OP, GNI_CEMODE_FPE_OP_INVAL, GNI_CEMODE_FPE_OFLOW, GNI_CEMODE_FPE_UFLOW,
    GNI_CEMODE_FPE_PRECISION, GNI_CQMODE_SILENT, GNI_CQMODE_LOCAL_EVENT, GNI_CQMODE_GLOBAL_EVENT,
    GNI_CQMODE_REMOTE_EVENT, GNI_CQMODE_DUAL_EVENTS, GNI_DLVMODE_PERFORMANCE, GNI_DLVMODE_NO_ADAPT,
    GNI_DLVMODE_NO_HASH, GNI_DLVMODE_NO_RADAPT, GNI_DLVMODE_IN_ORDER, GNI_DLVMODE_MNON_HASH,
    GNI_DLVMODE_NMIN_HASH, GNI_DLVMODE_MIN_HASH, GNI_DLVMODE_ADAPTIVE0, GNI_DLVMODE_ADAPTIVE1,
    GNI_DLVMODE_ADAPTIVE2, GNI_DLVMODE_ADAPTIVE3, GNI_DLVMODE_ORDERED_TAIL, GNI_RDMAMODE_PHYS_ADDR,
    GNI_RDMAMODE_FENCE, GNI_RDMAMODE_GETWC_DIS, GNI_ERRMASK_CORRECTABLE_MEMORY,
    GNI_ERRMASK_CRITICAL, GNI_ERRMASK_TRANSACTION, GNI_ERRMASK_ADDRESS_TRANSLATION,
    GNI_ERRMASK_TRANSIENT, GNI_ERRMASK_INFORMATIONAL, GNI_ERRMASK_DIAG_ONLY,
    GNI_ERRMASK_UNKNOWN_TRANSACTION, GNI_DATAGRAM_MAXSIZE, GNI_SMSG_MAX_SIZE,
    GNI_JOB_INVALID_LIMIT, GNI_JOB_CTRL_NTT_CLEANUP, GNI_JOB_CTRL_CE0_MASK, GNI_JOB_CTRL_CE1_MASK,
    GNI_JOB_CTRL_CE2_MASK, GNI_JOB_CTRL_CE3_MASK, GNI_JOB_CTRL_ALL_CE_MASK, GNI_MSGQ_MSG_SZ_MAX,
    GNI_MSGQ_NODE_INSTS_MAX, GNI_MSGQ_MODE_BLOCKING, MAX_BUILD_STRING_LENGTH,
    GNI_BI_FLAG_APPLY_NOW, GNI_BI_FLAG_APPLY_AFTER_THROTTLE, GNI_BI_FLAG_USE_DEFAULT_SETTINGS,
    GNI_BI_FLAG_VALUE_IS_NUM_ORB_ENTRIES, GNI_BI_INJECT_BW_MIN, GNI_BI_INJECT_BW_MAX,
    GNI_BI_INJECT_BW_ORB_MIN, GNI_BI_INJECT_BW_ORB_MAX, GNI_MEMHNDL_ATTR_READONLY,
    GNI_MEMHNDL_ATTR_VMDH, GNI_MEMHNDL_ATTR_MRT, GNI_MEMHNDL_ATTR_GART, GNI_MEMHNDL_ATTR_IOMMU,
    GNI_MEMHNDL_ATTR_PCI_IOMMU, GNI_MEMHNDL_ATTR_CLONE, GNI_SMSG_TYPE_INVALID, GNI_SMSG_TYPE_MBOX,
    GNI_SMSG_TYPE_MBOX_AUTO_RETRANSMIT, GNI_RC_SUCCESS, GNI_RC_NOT_DONE, GNI_RC_INVALID_PARAM,
    GNI_RC_ERROR_RESOURCE, GNI_RC_TIMEOUT, GNI_RC_PERMISSION_ERROR, GNI_RC_DESCRIPTOR_ERROR,
    GNI_RC_ALIGNMENT_ERROR, GNI_RC_INVALID_STATE, GNI_RC_NO_MATCH, GNI_RC_SIZE_ERROR,
    GNI_RC_TRANSACTION_ERROR, GNI_RC_ILLEGAL_OP, GNI_RC_ERROR_NOMEM, GNI_POST_PENDING,
    GNI_POST_COMPLETED, GNI_POST_ERROR, GNI_POST_TIMEOUT, GNI_POST_TERMINATED, GNI_POST_REMOTE_DATA,
    GNI_POST_RDMA_PUT, GNI_POST_RDMA_GET, GNI_POST_FMA_PUT, GNI_POST_FMA_PUT_W_SYNCFLAG,
    GNI_POST_FMA_GET, GNI_POST_AMO, GNI_POST_CQWRITE, GNI_POST_CE, GNI_POST_FMA_GET_W_FLAG,
    GNI_POST_AMO_W_FLAG, GNI_FMA_ATOMIC_FADD, GNI_FMA_ATOMIC_FADD_C, GNI_FMA_ATOMIC_FAND,
    GNI_FMA_ATOMIC_FAND_C, GNI_FMA_ATOMIC_FOR, GNI_FMA_ATOMIC_FOR_C, GNI_FMA_ATOMIC_FXOR,
    GNI_FMA_ATOMIC_FXOR_C, GNI_FMA_ATOMIC_FAX, GNI_FMA_ATOMIC_FAX_C, GNI_FMA_ATOMIC_CSWAP,
    GNI_FMA_ATOMIC_CSWAP_C, GNI_FMA_ATOMIC2_FAND_S, GNI_FMA_ATOMIC2_FAND, GNI_FMA_ATOMIC2_FAND_SC,
    GNI_FMA_ATOMIC2_FAND_C, GNI_FMA_ATOMIC2_FOR_S, GNI_FMA_ATOMIC2_FOR, GNI_FMA_ATOMIC2_FOR_SC,
    GNI_FMA_ATOMIC2_FOR_C, GNI_FMA_ATOMIC2_FXOR_S, GNI_FMA_ATOMIC2_FXOR, GNI_FMA_ATOMIC2_FXOR_SC,
    GNI_FMA_ATOMIC2_FXOR_C, GNI_FMA_ATOMIC2_FSWAP_S, GNI_FMA_ATOMIC2_FSWAP,
    GNI_FMA_ATOMIC2_FSWAP_SC, GNI_FMA_ATOMIC2_FSWAP_C, GNI_FMA_ATOMIC2_FAX_S, GNI_FMA_ATOMIC2_FAX,
    GNI_FMA_ATOMIC2_FAX_SC, GNI_FMA_ATOMIC2_FAX_C, GNI_FMA_ATOMIC2_FCSWAP_S,
    GNI_FMA_ATOMIC2_FCSWAP, GNI_FMA_ATOMIC2_FCSWAP_SC, GNI_FMA_ATOMIC2_FCSWAP_C,
    GNI_FMA_ATOMIC2_FIMIN_S, GNI_FMA_ATOMIC2_FIMIN, GNI_FMA_ATOMIC2_FIMIN_SC,
    GNI_FMA_ATOMIC2_FIMIN_C, GNI_FMA_ATOMIC2_FIMAX_S, GNI_FMA_ATOMIC2_FIMAX,
    GNI_FMA_ATOMIC2_FIMAX_SC, GNI_FMA_ATOMIC2_FIMAX_C, GNI_FMA_ATOMIC2_FIADD_S,
    GNI_FMA_ATOMIC2_FIADD, GNI_FMA_ATOMIC2_FIADD_SC, GNI_FMA_ATOMIC2_FIADD_C,
    GNI_FMA_ATOMIC2_FFPMIN_S, GNI_FMA_ATOMIC2_FFPMIN, GNI_FMA_ATOMIC2_FFPMIN_SC,
    GNI_FMA_ATOMIC2_FFPMIN_C, GNI_FMA_ATOMIC2_FFPMAX_S, GNI_FMA_ATOMIC2_FFPMAX,
    GNI_FMA_ATOMIC2_FFPMAX_SC, GNI_FMA_ATOMIC2_FFPMAX_C, GNI_FMA_ATOMIC2_FFPADD_S,
    GNI_FMA_ATOMIC2_FFPADD, GNI_FMA_ATOMIC2_FFPADD_SC, GNI_FMA_ATOMIC2_FFPADD_C,
    GNI_FMA_ATOMIC_ADD, GNI_FMA_ATOMIC_ADD_C, GNI_FMA_ATOMIC_AND, GNI_FMA_ATOMIC_AND_C,
    GNI_FMA_ATOMIC_OR, GNI_FMA_ATOMIC_OR_C, GNI_FMA_ATOMIC_XOR, GNI_FMA_ATOMIC_XOR_C,
    GNI_FMA_ATOMIC_AX, GNI_FMA_ATOMIC_AX_C, GNI_FMA_ATOMIC2_AND_S, GNI_FMA_ATOMIC2_AND,
    GNI_FMA_ATOMIC2_AND_SC, GNI_FMA_ATOMIC2_AND_C, GNI_FMA_ATOMIC2_OR_S, GNI_FMA_ATOMIC2_OR,
    GNI_FMA_ATOMIC2_OR_SC, GNI_FMA_ATOMIC2_OR_C, GNI_FMA_ATOMIC2_XOR_S, GNI_FMA_ATOMIC2_XOR,
    GNI_FMA_ATOMIC2_XOR_SC, GNI_FMA_ATOMIC2_XOR_C, GNI_FMA_ATOMIC2_SWAP_S, GNI_FMA_ATOMIC2_SWAP,
    GNI_FMA_ATOMIC2_SWAP_SC, GNI_FMA_ATOMIC2_SWAP_C, GNI_FMA_ATOMIC2_AX_S, GNI_FMA_ATOMIC2_AX,
    GNI_FMA_ATOMIC2_AX_SC, GNI_FMA_ATOMIC2_AX_C, GNI_FMA_ATOMIC2_CSWAP_S, GNI_FMA_ATOMIC2_CSWAP,
    GNI_FMA_ATOMIC2_CSWAP_SC, GNI_FMA_ATOMIC2_CSWAP_C, GNI_FMA_ATOMIC2_IMIN_S,
    GNI_FMA_ATOMIC2_IMIN, GNI_FMA_ATOMIC2_IMIN_SC, GNI_FMA_ATOMIC2_IMIN_C, GNI_FMA_ATOMIC2_IMAX_S,
    GNI_FMA_ATOMIC2_IMAX, GNI_FMA_ATOMIC2_IMAX_SC, GNI_FMA_ATOMIC2_IMAX_C, GNI_FMA_ATOMIC2_IADD_S,
    GNI_FMA_ATOMIC2_IADD, GNI_FMA_ATOMIC2_IADD_SC, GNI_FMA_ATOMIC2_IADD_C, GNI_FMA_ATOMIC2_FPMIN_S,
    GNI_FMA_ATOMIC2_FPMIN, GNI_FMA_ATOMIC2_FPMIN_SC, GNI_FMA_ATOMIC2_FPMIN_C,
    GNI_FMA_ATOMIC2_FPMAX_S, GNI_FMA_ATOMIC2_FPMAX, GNI_FMA_ATOMIC2_FPMAX_SC,
    GNI_FMA_ATOMIC2_FPMAX_C, GNI_FMA_ATOMIC2_FPADD_S, GNI_FMA_ATOMIC2_FPADD,
    GNI_FMA_ATOMIC2_FPADD_SC, GNI_FMA_ATOMIC2_FPADD_C, GNI_FMA_CE_AND_S, GNI_FMA_CE_AND,
    GNI_FMA_CE_OR_S, GNI_FMA_CE_OR, GNI_FMA_CE_XOR_S, GNI_FMA_CE_XOR, GNI_FMA_CE_IMIN_LIDX_S,
    GNI_FMA_CE_IMIN_LIDX, GNI_FMA_CE_IMAX_LIDX_S, GNI_FMA_CE_IMAX_LIDX, GNI_FMA_CE_IADD_S,
    GNI_FMA_CE_IADD, GNI_FMA_CE_FPMIN_LIDX_S, GNI_FMA_CE_FPMIN_LIDX, GNI_FMA_CE_FPMAX_LIDX_S,
    GNI_FMA_CE_FPMAX_LIDX, GNI_FMA_CE_FPADD_S, GNI_FMA_CE_FPADD, GNI_FMA_CE_IMIN_GIDX_S,
    GNI_FMA_CE_IMIN_GIDX, GNI_FMA_CE_IMAX_GIDX_S, GNI_FMA_CE_IMAX_GIDX, GNI_FMA_CE_FPMIN_GIDX_S,
    GNI_FMA_CE_FPMIN_GIDX, GNI_FMA_CE_FPMAX_GIDX_S, GNI_FMA_CE_FPMAX_GIDX, GNI_CE_CHILD_UNUSED,
    GNI_CE_CHILD_VCE, GNI_CE_CHILD_PE, GNI_DEVICE_GEMINI, GNI_DEVICE_ARIES, GNI_DEVICE_PISCES,
    GNI_DEVICE_LAST, GNI_DEV_RES_FIRST, GNI_DEV_RES_MDD, GNI_DEV_RES_MRT, GNI_DEV_RES_CQ,
    GNI_DEV_RES_FMA, GNI_DEV_RES_CE, GNI_DEV_RES_DLA, GNI_DEV_RES_LAST, GNI_JOB_RES_FIRST,
    GNI_JOB_RES_MDD, GNI_JOB_RES_MRT, GNI_JOB_RES_IOMMU, GNI_JOB_RES_GART, GNI_JOB_RES_CQ,
    GNI_JOB_RES_FMA, GNI_JOB_RES_RMDA, GNI_JOB_RES_CE, GNI_JOB_RES_DLA, GNI_JOB_RES_SFMA,
    GNI_JOB_RES_LAST, GNI_STAT_SMSG_BUFF_CREDITS_STALL, GNI_STAT_SMSG_DLA_STALL,
    GNI_STAT_SMSG_MBOX_CREDITS_STALL, GNI_STAT_SMSG_REQ_STALL, GNI_STAT_SMSG_RETRANS_COUNT,
    GNI_STAT_SMSG_RETRANS_DLA_COUNT, GNI_STAT_SMSG_RETRANS_STALL, GNI_NUM_STATS,
}

/// Constants of types.rs with no C counterpart in our header.
const RUST_ONLY: &[&str] = &[
    "GNI_RC_COUNT",
    "GNI_NUM_STATS_ARIES",
    "GNI_STAT_DLA_ALLOC_STATUS_STALL",
    "GNI_STAT_DLA_ALLOC_STATUS_TIMEOUT",
    "GNI_STAT_DLA_BLOCK_ORPHANED",
    "GNI_STAT_DLA_BLOCK_RETRANS_COUNT",
    "GNI_STAT_DLA_FREE_BLOCKS_STALL",
    "GNI_STAT_DLA_FREE_FMAD_BLOCKS_STALL",
    "GNI_STAT_DLA_HIGH_RETRANS_COUNT",
    "GNI_STAT_DLA_OVERFLOW_RESEND",
    "GNI_STAT_DLA_RETRANS_COUNT",
    "GNI_STAT_DLA_TOTAL_RETRANS_COUNT",
    "GNI_STAT_FLBTE_TXD_CORRUPT",
    "GNI_STAT_FLBTE_TXD_NONE",
];

#[test]
fn constant_list_covers_types_rs() {
    // A constant added to types.rs must be added to CONSTS (or RUST_ONLY),
    // else its value would go unchecked.
    let src = std::fs::read_to_string(Path::new(MANIFEST).join("src/types.rs")).unwrap();
    let declared: Vec<&str> = src
        .lines()
        .filter_map(|l| l.strip_prefix("pub const "))
        .filter(|l| !l.starts_with("fn "))
        .filter_map(|l| l.split_once(':').map(|(n, _)| n.trim()))
        .collect();
    let listed: Vec<&str> = CONSTS.iter().map(|c| c.0).chain(RUST_ONLY.iter().copied()).collect();
    for n in &declared {
        assert!(listed.contains(n), "{n} is in types.rs but not in tests/layout.rs");
    }
    assert_eq!(declared.len(), listed.len(), "duplicate or stale names in tests/layout.rs");
}

#[test]
fn constants_match_header() {
    if !have_cc() {
        return;
    }
    let mut src = String::from("#include <stdio.h>\n#include <gni_pub.h>\nint main(void) {\n");
    for (name, _) in CONSTS {
        src += &format!("    printf(\"{name} %lld\\n\", (long long)({name}));\n");
    }
    src += "    return 0;\n}\n";
    let c = parse(&compile_and_run("consts", &src, &[], None));
    let mut bad = Vec::new();
    for (name, rust) in CONSTS {
        let cval: i128 = c[*name].parse().unwrap();
        if cval != *rust {
            bad.push(format!("{name}: C {cval}, Rust {rust}"));
        }
    }
    assert!(bad.is_empty(), "constants differ:\n{}", bad.join("\n"));
}

// ---- struct layout ------------------------------------------------------------

/// (C type, Rust size, Rust align, [(field path, Rust offset)]).
type Layout = (&'static str, usize, usize, Vec<(&'static str, usize)>);

macro_rules! layouts {
    ($($t:ident { $($($f:ident).+),* $(,)? }),* $(,)?) => {
        vec![$((
            stringify!($t),
            size_of::<$t>(),
            align_of::<$t>(),
            vec![$((stringify!($($f).+), offset_of!($t, $($f).+))),*],
        )),*]
    };
}

fn rust_layouts() -> Vec<Layout> {
    layouts! {
        gni_mem_handle_t { qword1, qword2 },
        gni_smsg_attr_t { msg_type, msg_buffer, buff_size, mem_hndl, mbox_offset, mbox_maxcredit,
                          msg_maxsize },
        gni_mem_segment_t { address, length },
        gni_ce_result_t { control, result1, result2 },
        gni_post_descriptor_t { next_descr, prev_descr, post_id, status, cq_mode_complete, type_,
                                cq_mode, dlvr_mode, local_addr, local_mem_hndl, remote_addr,
                                remote_mem_hndl, length, rdma_mode, src_cq_hndl, sync_flag_value,
                                sync_flag_addr, amo_cmd, first_operand, second_operand,
                                cqwrite_value, ce_cmd, ce_mode, ce_red_id },
        gni_ntt_entry_t { blck_addr, rplc_addr, rplc_size },
        gni_ntt_descriptor_t { group_size, granularity, u, u.table, u.table_v2, flags },
        gni_error_event_t { error_code, error_category, ptag, serial_number, timestamp,
                            info_mmrs },
        gni_job_limits_t { mdd_limit, a, a.mrt_limit, a.m, a.m.ce_limit, a.m.iommu_limit,
                           a.m.res_byte2, a.m.res_byte3, b, b.gart_limit, b.dla_limit,
                           fma_limit, bte_limit, cq_limit, ntt_ctrl, ntt_base, ntt_size },
        gni_dev_res_desc_t { available, reserved, held, total },
        gni_job_res_desc_t { used, limit },
        gni_msgq_attr_t { max_msg_sz, smsg_q_sz, rcv_pool_sz, num_msgq_eps, nloc_insts, modes,
                          rcv_cq_sz },
        gni_msgq_rem_inst_t { id, mdh, mdh_off },
        gni_msgq_ep_attr_t { pe_addr, max_msg_sz, smsg_q_sz, num_insts, insts },
        gni_version_info_t { ugni_version, ugni_svn_revision, ugni_build_string, kgni_version,
                             kgni_svn_revision, kgni_build_string },
        gni_bi_desc_t { current_bw, current_aot_bw, current_norbs, flags, sys_def_bw,
                        sys_def_aot_bw, cle_seqnum, hss_seqnum },
        gni_return_t {},
        gni_cq_mode_t {},
        gni_cq_entry_t {},
        gni_error_mask_t {},
        gni_nic_handle_t {},
        gni_cdm_handle_t {},
        gni_ep_handle_t {},
        gni_cq_handle_t {},
        gni_err_handle_t {},
        gni_msgq_handle_t {},
        gni_ce_handle_t {},
        gni_post_type_t {},
        gni_fma_cmd_type_t {},
        gni_statistic_t {},
    }
}

/// Rust field names that differ from C (keywords).
fn c_field(path: &str) -> String {
    path.split('.').map(|p| if p == "type_" { "type" } else { p }).collect::<Vec<_>>().join(".")
}

#[test]
fn layouts_match_header() {
    if !have_cc() {
        return;
    }
    let layouts = rust_layouts();
    let mut src = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <gni_pub.h>\nint main(void) {\n",
    );
    for (t, _, _, fields) in &layouts {
        src += &format!(
            "    printf(\"{t} %zu %zu\\n\", sizeof({t}), (size_t)_Alignof({t}));\n"
        );
        for (f, _) in fields {
            let cf = c_field(f);
            src += &format!("    printf(\"{t}.{cf} %zu\\n\", offsetof({t}, {cf}));\n");
        }
    }
    src += "    return 0;\n}\n";
    let c = parse(&compile_and_run("layout", &src, &[], None));
    let mut bad = Vec::new();
    for (t, size, align, fields) in &layouts {
        let rust = format!("{size} {align}");
        if c[*t] != rust {
            bad.push(format!("{t}: C size/align {}, Rust {rust}", c[*t]));
        }
        for (f, off) in fields {
            let key = format!("{t}.{}", c_field(f));
            if c[&key] != off.to_string() {
                bad.push(format!("{key}: C offset {}, Rust {off}", c[&key]));
            }
        }
    }
    assert!(bad.is_empty(), "layouts differ:\n{}", bad.join("\n"));
}

#[test]
fn function_like_macros_match() {
    if !have_cc() {
        return;
    }
    let src = r#"#include <stdio.h>
#include <gni_pub.h>
int main(void) {
    unsigned v = 0x125C0304u;
    printf("major %u\nminor %u\nrev %u\n", GNI_GET_MAJOR(v), GNI_GET_MINOR(v), GNI_GET_REV(v));
    printf("check %u\n", (unsigned)GNI_VERSION_CHECK(0x12u, 0x5Cu, 0x0304u));
    printf("cookie %u\n", (unsigned)GNI_JOB_CREATE_COOKIE(0xABCDu, 0xFu));
    printf("exmem %u\n", (unsigned)GNI_EXMEM_FLAGS(0x81000001u));
    for (unsigned m = 0; m < 16; m++)
        printf("cq%u %d%d%d%d%d%d\n", m, GNI_CQ_IS_NON_BLOCKING(m), GNI_CQ_IS_BLOCKING(m),
               GNI_CQ_IS_EMULATED(m), GNI_CQ_IS_NOT_EMULATED(m), GNI_CQ_IS_INVALID_EMULATED(m),
               GNI_CQ_USE_PHYS_PAGES(m));
    return 0;
}
"#;
    let c = parse(&compile_and_run("macros", src, &[], None));
    let v = 0x125C0304u32;
    assert_eq!(c["major"], GNI_GET_MAJOR(v).to_string());
    assert_eq!(c["minor"], GNI_GET_MINOR(v).to_string());
    assert_eq!(c["rev"], GNI_GET_REV(v).to_string());
    assert_eq!(c["check"], GNI_VERSION_CHECK(0x12, 0x5C, 0x0304).to_string());
    assert_eq!(c["cookie"], GNI_JOB_CREATE_COOKIE(0xABCD, 0xF).to_string());
    assert_eq!(c["exmem"], GNI_EXMEM_FLAGS(0x81000001).to_string());
    assert!(GNI_MEM_IS_EXTERNAL(0x81000001) && !GNI_MEM_IS_EXTERNAL(0x00FFFFFF));
    for m in 0u32..16 {
        let b = |x: bool| if x { '1' } else { '0' };
        let rust: String = [
            b(!GNI_CQ_IS_BLOCKING(m)),
            b(GNI_CQ_IS_BLOCKING(m)),
            b(GNI_CQ_IS_EMULATED(m)),
            b(!GNI_CQ_IS_EMULATED(m)),
            b(GNI_CQ_IS_INVALID_EMULATED(m)),
            b(GNI_CQ_USE_PHYS_PAGES(m)),
        ]
        .iter()
        .collect();
        assert_eq!(c[&format!("cq{m}")], rust, "CQ mode predicates for {m}");
    }
}

// ---- the built library ----------------------------------------------------------

/// Directory holding a current libugni.so for this test's profile.  Cargo
/// does not build a cdylib for integration tests, so build it here (a no-op
/// when fresh).  The test binary is <target>/<profile>/deps/layout-<hash>.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
    let target = dir.parent().unwrap();
    let mut cargo = Command::new(env!("CARGO"));
    cargo
        .args(["build", "--quiet", "-p", "ugni-sys", "--manifest-path"])
        .arg(Path::new(MANIFEST).join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target);
    if dir.file_name().unwrap() == "release" {
        cargo.arg("--release");
    }
    let st = cargo.status().expect("running cargo build");
    assert!(st.success(), "cargo build -p ugni-sys failed");
    assert!(dir.join("libugni.so").exists(), "no libugni.so in {}", dir.display());
    dir
}

/// Where the shared libstd the library links against lives (prefer-dynamic).
fn rust_sysroot_lib() -> Option<String> {
    let out = Command::new("rustc").args(["--print", "target-libdir"]).output().ok()?;
    Some(String::from_utf8(out.stdout).ok()?.trim().to_string())
}

#[test]
fn string_tables_from_c() {
    if !have_cc() {
        return;
    }
    let dir = lib_dir();
    let sys = rust_sysroot_lib().expect("rustc --print target-libdir");
    // Programs record the soname, libugni.so.0, which cargo does not create.
    let soname_dir = scratch("soname");
    let link = soname_dir.join("libugni.so.0");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(dir.join("libugni.so"), &link).unwrap();
    let dir = dir.to_str().unwrap();
    let ld = format!("{}:{dir}:{sys}", soname_dir.display());
    let src = r#"#include <stdio.h>
#include <gni_pub.h>
int main(void) {
    printf("invalid %s\n", gni_err_str[GNI_RC_INVALID_PARAM]);
    printf("first %s\n", gni_err_str[GNI_RC_SUCCESS]);
    printf("last %s\n", gni_err_str[GNI_RC_ERROR_NOMEM]);
    printf("stat %s\n", gni_statistic_str[GNI_NUM_STATS - 1]);
    /* Unimplemented calls must fail cleanly, not crash. */
    uint32_t v = 0;
    printf("rc %d\n", (int)GNI_GetNicStat(NULL, GNI_STAT_SMSG_REQ_STALL, &v));
    return 0;
}
"#;
    let rpath_link = format!("-Wl,-rpath-link,{ld}");
    let out = compile_and_run(
        "strings",
        src,
        &["-L", dir, "-lugni", &rpath_link],
        Some(&ld),
    );
    let _ = std::fs::remove_dir_all(&soname_dir);
    let c = parse(&out);
    assert_eq!(c["invalid"], "GNI_RC_INVALID_PARAM");
    assert_eq!(c["first"], "GNI_RC_SUCCESS");
    assert_eq!(c["last"], "GNI_RC_ERROR_NOMEM");
    assert_eq!(c["stat"], "GNI_STAT_SMSG_RETRANS_STALL");
    // The value check is only meaningful while GNI_GetNicStat is pending; once
    // implemented, a NULL NIC handle must still be refused (not crash).
    assert_ne!(c["rc"], "0", "GNI_GetNicStat(NULL, ...) returned GNI_RC_SUCCESS");
}
