//! C-visible types and constants (values from the ABI fact sheet, `portals3.md`).
#![allow(non_camel_case_types)]

use std::ffi::c_void;

pub type ptl_size_t = u64;
pub type ptl_handle_any_t = u32;
pub type ptl_handle_ni_t = u32;
pub type ptl_handle_md_t = u32;
pub type ptl_handle_me_t = u32;
pub type ptl_handle_eq_t = u32;
pub type ptl_pt_index_t = u32;
pub type ptl_ac_index_t = u32;
pub type ptl_match_bits_t = u64;
pub type ptl_interface_t = u32;
pub type ptl_nid_t = u32;
pub type ptl_pid_t = u32;
pub type ptl_uid_t = u32;
pub type ptl_jid_t = u32;
pub type ptl_sr_index_t = u32;
pub type ptl_sr_value_t = u64;
pub type ptl_ni_fail_t = u32;
pub type ptl_seq_t = u32;
pub type ptl_hdr_data_t = u64;
pub type ptl_time_t = u32;
pub type ptl_eq_handler_t = Option<unsafe extern "C" fn(*mut ptl_event_t)>;

pub const PTL_INVALID_HANDLE: u32 = 0xffff_ffff;
pub const PTL_HANDLE_NONE: u32 = 0x7fff_ffff;
pub const PTL_EQ_NONE: u32 = 0xbfff_ffff;
pub const PTL_ANY: u32 = 0xffff_ffff;
pub const PTL_NID_ANY: u32 = PTL_ANY;
pub const PTL_PID_ANY: u32 = PTL_ANY;
pub const PTL_JID_ANY: u32 = PTL_ANY;
pub const PTL_UID_ANY: u32 = PTL_ANY;
pub const PTL_PT_INDEX_ANY: u32 = PTL_ANY;
pub const PTL_TIME_FOREVER: u32 = PTL_ANY;

pub const PTL_IFACE_UTCP0: u32 = 0xf0f0_f000;
pub const PTL_IFACE_IBNG0: u32 = 0xf0f0_f050;

pub const PTL_RETAIN: u32 = 0;
pub const PTL_UNLINK: u32 = 1;
pub const PTL_INS_BEFORE: u32 = 0;
pub const PTL_INS_AFTER: u32 = 1;
pub const PTL_ACK_REQ: u32 = 0;
pub const PTL_NO_ACK_REQ: u32 = 1;

pub const PTL_MD_THRESH_INF: i32 = -1;
pub const PTL_MD_OP_PUT: u32 = 0x0001;
pub const PTL_MD_OP_GET: u32 = 0x0002;
pub const PTL_MD_MANAGE_REMOTE: u32 = 0x0004;
pub const PTL_MD_TRUNCATE: u32 = 0x0008;
pub const PTL_MD_ACK_DISABLE: u32 = 0x0010;
pub const PTL_MD_IOVEC: u32 = 0x0020;
pub const PTL_MD_MAX_SIZE: u32 = 0x0040;
pub const PTL_MD_EVENT_START_DISABLE: u32 = 0x0080;
pub const PTL_MD_EVENT_END_DISABLE: u32 = 0x0100;
pub const MD_OPTIONS_KNOWN: u32 = 0x01ff;

pub const PTL_NI_OK: u32 = 0;
pub const PTL_NI_FAIL: u32 = 1;

// ptl_event_kind_t
pub const PTL_EVENT_GET_START: u32 = 0;
pub const PTL_EVENT_GET_END: u32 = 1;
pub const PTL_EVENT_PUT_START: u32 = 2;
pub const PTL_EVENT_PUT_END: u32 = 3;
pub const PTL_EVENT_GETPUT_START: u32 = 4;
pub const PTL_EVENT_GETPUT_END: u32 = 5;
pub const PTL_EVENT_REPLY_START: u32 = 6;
pub const PTL_EVENT_REPLY_END: u32 = 7;
pub const PTL_EVENT_SEND_START: u32 = 8;
pub const PTL_EVENT_SEND_END: u32 = 9;
pub const PTL_EVENT_ACK: u32 = 10;
pub const PTL_EVENT_UNLINK: u32 = 11;

// ptl_err_t
pub const PTL_OK: i32 = 0;
pub const PTL_AC_INDEX_INVALID: i32 = 1;
pub const PTL_EQ_DROPPED: i32 = 2;
pub const PTL_EQ_EMPTY: i32 = 3;
pub const PTL_EQ_INVALID: i32 = 4;
pub const PTL_FAIL: i32 = 5;
pub const PTL_HANDLE_INVALID: i32 = 6;
pub const PTL_IFACE_INVALID: i32 = 7;
pub const PTL_MD_ILLEGAL: i32 = 8;
pub const PTL_MD_INVALID: i32 = 9;
pub const PTL_MD_IN_USE: i32 = 10;
pub const PTL_MD_NO_UPDATE: i32 = 11;
pub const PTL_ME_INVALID: i32 = 12;
pub const PTL_ME_IN_USE: i32 = 13;
pub const PTL_ME_LIST_TOO_LONG: i32 = 14;
pub const PTL_NI_INVALID: i32 = 15;
pub const PTL_NO_INIT: i32 = 16;
pub const PTL_NO_SPACE: i32 = 17;
pub const PTL_PID_INVALID: i32 = 18;
pub const PTL_PROCESS_INVALID: i32 = 19;
pub const PTL_PT_FULL: i32 = 20;
pub const PTL_PT_INDEX_INVALID: i32 = 21;
pub const PTL_SEGV: i32 = 22;
pub const PTL_SR_INDEX_INVALID: i32 = 23;
pub const PTL_UNKNOWN_ERROR: i32 = 24;

// Status registers.
pub const PTL_SR_DROP_COUNT: u32 = 0;
pub const PTL_SR_DROP_LENGTH: u32 = 1;
pub const PTL_SR_RECV_COUNT: u32 = 2;
pub const PTL_SR_RECV_LENGTH: u32 = 3;
pub const PTL_SR_SEND_COUNT: u32 = 4;
pub const PTL_SR_SEND_LENGTH: u32 = 5;
pub const PTL_SR_MES_ALLOC: u32 = 12;
pub const PTL_SR_MES_FREED: u32 = 13;
pub const PTL_SR_MES_MAX: u32 = 14;
pub const PTL_SR_MES_CUR: u32 = 15;
pub const PTL_SR_MDS_ALLOC: u32 = 16;
pub const PTL_SR_MDS_FREED: u32 = 17;
pub const PTL_SR_MDS_MAX: u32 = 18;
pub const PTL_SR_MDS_CUR: u32 = 19;
pub const PTL_SR_EQS_ALLOC: u32 = 20;
pub const PTL_SR_EQS_FREED: u32 = 21;
pub const PTL_SR_EQS_MAX: u32 = 22;
pub const PTL_SR_EQS_CUR: u32 = 23;

// Debug mask bits softnic acts on.
pub const PTL_DBG_API: u32 = 1 << 0;
pub const PTL_DBG_DROP: u32 = 1 << 3;
pub const PTL_DBG_EVENT: u32 = 1 << 10;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ptl_ni_limits_t {
    pub max_mes: i32,
    pub max_mds: i32,
    pub max_eqs: i32,
    pub max_ac_index: i32,
    pub max_pt_index: i32,
    pub max_md_iovecs: i32,
    pub max_me_list: i32,
    pub max_getput_md: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ptl_process_id_t {
    pub nid: u32,
    pub pid: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ptl_md_t {
    pub start: *mut c_void,
    pub length: ptl_size_t,
    pub threshold: i32,
    pub max_size: ptl_size_t,
    pub options: u32,
    pub user_ptr: *mut c_void,
    pub eq_handle: ptl_handle_eq_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ptl_md_iovec_t {
    pub iov_base: *mut c_void,
    pub iov_len: ptl_size_t,
}

/// `ptl_md_t` with integers for the pointers: the form it takes in shared memory and in
/// events (plain data, any bit pattern valid).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MdView {
    pub start: u64,
    pub length: u64,
    pub threshold: i32,
    pub _pad0: u32,
    pub max_size: u64,
    pub options: u32,
    pub _pad1: u32,
    pub user_ptr: u64,
    pub eq_handle: u32,
    pub _pad2: u32,
}

impl MdView {
    pub fn from_c(md: &ptl_md_t) -> MdView {
        MdView {
            start: md.start as u64,
            length: md.length,
            threshold: md.threshold,
            max_size: md.max_size,
            options: md.options,
            user_ptr: md.user_ptr as u64,
            eq_handle: md.eq_handle,
            ..MdView::default()
        }
    }
    pub fn to_c(&self) -> ptl_md_t {
        ptl_md_t {
            start: self.start as *mut c_void,
            length: self.length,
            threshold: self.threshold,
            max_size: self.max_size,
            options: self.options,
            user_ptr: self.user_ptr as *mut c_void,
            eq_handle: self.eq_handle,
        }
    }
}

/// `ptl_event_t` as plain data: the entry type of the event rings, copied to the
/// caller's `ptl_event_t` (same layout) with `sequence` written last.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Event {
    pub kind: u32,
    pub initiator: ptl_process_id_t,
    pub uid: u32,
    pub jid: u32,
    pub pt_index: u32,
    pub match_bits: u64,
    pub rlength: u64,
    pub mlength: u64,
    pub offset: u64,
    pub md_handle: u32,
    pub _pad0: u32,
    pub md: MdView,
    pub hdr_data: u64,
    pub link: u32,
    pub ni_fail_type: u32,
    pub sequence: u32,
    pub _pad1: u32,
}

/// The C `ptl_event_t` is `Event` (the Rust side never builds one field by field).
pub type ptl_event_t = Event;

// SAFETY: repr(C) integers only, no padding a reader could misinterpret (explicit pad
// fields), any bit pattern valid.
unsafe impl softnic_fabric::ring::Pod for Event {}

/// The part of [`Event`] before `sequence` (which a consumer writes last).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct EventHead {
    pub kind: u32,
    pub initiator: ptl_process_id_t,
    pub uid: u32,
    pub jid: u32,
    pub pt_index: u32,
    pub match_bits: u64,
    pub rlength: u64,
    pub mlength: u64,
    pub offset: u64,
    pub md_handle: u32,
    pub _pad0: u32,
    pub md: MdView,
    pub hdr_data: u64,
    pub link: u32,
    pub ni_fail_type: u32,
}

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<EventHead>() == offset_of!(Event, sequence));
    assert!(offset_of!(EventHead, md) == offset_of!(Event, md) && offset_of!(EventHead, hdr_data) == offset_of!(Event, hdr_data));
    assert!(offset_of!(EventHead, ni_fail_type) == offset_of!(Event, ni_fail_type) && offset_of!(EventHead, match_bits) == offset_of!(Event, match_bits));
};

/// An [`Event`] without its padding, as the event rings hold it: 120 bytes, so that a
/// ring slot (a sequence word and the entry) is exactly two cache lines, which is what
/// a deposit moves from the depositing process to the consumer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packed {
    pub kind: u8,
    pub fail: u8,
    pub _pad: u16,
    pub link: u32,
    pub initiator: ptl_process_id_t,
    pub uid: u32,
    pub jid: u32,
    pub pt_index: u32,
    pub md_handle: u32,
    pub match_bits: u64,
    pub rlength: u64,
    pub mlength: u64,
    pub offset: u64,
    pub hdr_data: u64,
    pub md_start: u64,
    pub md_length: u64,
    pub md_max_size: u64,
    pub md_user_ptr: u64,
    pub md_threshold: i32,
    pub md_options: u32,
    pub sequence: u32,
    pub md_eq_handle: u32,
}

// SAFETY: repr(C) integers only (explicit padding), any bit pattern valid.
unsafe impl softnic_fabric::ring::Pod for Packed {}

const _: () = assert!(std::mem::size_of::<Packed>() == 120 && std::mem::align_of::<Packed>() == 8);

impl Packed {
    /// The kind that is no event (wakes waiters of a freed queue).
    pub const POISON: u8 = u8::MAX;

    /// An event of `kind` about the MD `md_handle` whose view is `md`; the caller sets
    /// the other fields (built in place: this is on every operation's path).
    #[inline]
    pub fn about(kind: u32, md_handle: u32, md: &MdView) -> Packed {
        Packed {
            kind: kind.min(254) as u8,
            md_handle,
            md_start: md.start,
            md_length: md.length,
            md_max_size: md.max_size,
            md_user_ptr: md.user_ptr,
            md_threshold: md.threshold,
            md_options: md.options,
            md_eq_handle: md.eq_handle,
            ..Packed::default()
        }
    }

    pub fn pack(e: &Event) -> Packed {
        Packed {
            kind: e.kind.min(254) as u8,
            fail: e.ni_fail_type.min(255) as u8,
            _pad: 0,
            link: e.link,
            initiator: e.initiator,
            uid: e.uid,
            jid: e.jid,
            pt_index: e.pt_index,
            md_handle: e.md_handle,
            match_bits: e.match_bits,
            rlength: e.rlength,
            mlength: e.mlength,
            offset: e.offset,
            hdr_data: e.hdr_data,
            md_start: e.md.start,
            md_length: e.md.length,
            md_max_size: e.md.max_size,
            md_user_ptr: e.md.user_ptr,
            md_threshold: e.md.threshold,
            md_options: e.md.options,
            sequence: e.sequence,
            md_eq_handle: e.md.eq_handle,
        }
    }

    /// The event's fields before `sequence`, in `ptl_event_t`'s layout.
    #[inline]
    pub fn head(&self) -> EventHead {
        EventHead {
            kind: self.kind as u32,
            initiator: self.initiator,
            uid: self.uid,
            jid: self.jid,
            pt_index: self.pt_index,
            match_bits: self.match_bits,
            rlength: self.rlength,
            mlength: self.mlength,
            offset: self.offset,
            md_handle: self.md_handle,
            _pad0: 0,
            md: MdView {
                start: self.md_start,
                length: self.md_length,
                threshold: self.md_threshold,
                max_size: self.md_max_size,
                options: self.md_options,
                user_ptr: self.md_user_ptr,
                eq_handle: self.md_eq_handle,
                ..MdView::default()
            },
            hdr_data: self.hdr_data,
            link: self.link,
            ni_fail_type: self.fail as u32,
        }
    }

    pub fn unpack(&self) -> Event {
        Event {
            kind: self.kind as u32,
            initiator: self.initiator,
            uid: self.uid,
            jid: self.jid,
            pt_index: self.pt_index,
            match_bits: self.match_bits,
            rlength: self.rlength,
            mlength: self.mlength,
            offset: self.offset,
            md_handle: self.md_handle,
            md: MdView {
                start: self.md_start,
                length: self.md_length,
                threshold: self.md_threshold,
                max_size: self.md_max_size,
                options: self.md_options,
                user_ptr: self.md_user_ptr,
                eq_handle: self.md_eq_handle,
                ..MdView::default()
            },
            hdr_data: self.hdr_data,
            link: self.link,
            ni_fail_type: self.fail as u32,
            sequence: self.sequence,
            ..Event::default()
        }
    }
}

// The layouts of the fact sheet (x86-64 LP64).
const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    assert!(size_of::<ptl_ni_limits_t>() == 32 && align_of::<ptl_ni_limits_t>() == 4);
    assert!(size_of::<ptl_process_id_t>() == 8 && align_of::<ptl_process_id_t>() == 4);
    assert!(size_of::<ptl_md_t>() == 56 && align_of::<ptl_md_t>() == 8);
    assert!(offset_of!(ptl_md_t, max_size) == 24 && offset_of!(ptl_md_t, options) == 32);
    assert!(offset_of!(ptl_md_t, user_ptr) == 40 && offset_of!(ptl_md_t, eq_handle) == 48);
    assert!(size_of::<MdView>() == 56);
    assert!(offset_of!(MdView, max_size) == 24 && offset_of!(MdView, options) == 32);
    assert!(offset_of!(MdView, user_ptr) == 40 && offset_of!(MdView, eq_handle) == 48);
    assert!(size_of::<ptl_md_iovec_t>() == 16);
    assert!(size_of::<Event>() == 144 && align_of::<Event>() == 8);
    assert!(offset_of!(Event, initiator) == 4 && offset_of!(Event, uid) == 12);
    assert!(offset_of!(Event, jid) == 16 && offset_of!(Event, pt_index) == 20);
    assert!(offset_of!(Event, match_bits) == 24 && offset_of!(Event, rlength) == 32);
    assert!(offset_of!(Event, mlength) == 40 && offset_of!(Event, offset) == 48);
    assert!(offset_of!(Event, md_handle) == 56 && offset_of!(Event, md) == 64);
    assert!(offset_of!(Event, hdr_data) == 120 && offset_of!(Event, link) == 128);
    assert!(offset_of!(Event, ni_fail_type) == 132 && offset_of!(Event, sequence) == 136);
};
