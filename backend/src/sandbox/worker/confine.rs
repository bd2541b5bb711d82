//! How a worker confines itself before it reads any user code, in this order:
//! - **No new privileges** (`PR_SET_NO_NEW_PRIVS`): nothing it could execute gains rights.
//! - **Resource limits**: address space (its own size at start plus the configured memory),
//!   no core files, no file writes (`RLIMIT_FSIZE` 0), few descriptors; the CPU-time limit is
//!   set again before each request ([`limit_cpu_for`]), as the time used so far plus that
//!   request's deadline, because the kernel counts it over the whole process.
//! - **A syscall filter** (seccomp, Linux on x86_64 and aarch64): opening, creating or
//!   removing files, sockets of any kind, starting processes or threads, signalling other
//!   processes, tracing, mounting and loading kernel code all fail with `EPERM`, and so does
//!   any I/O on a descriptor other than its three pipes. A filter
//!   that lists what is refused (rather than what is allowed) keeps the allocator, the clock
//!   and the pipe working whatever the C library needs for them; what matters is that
//!   nothing the worker could be made to do reaches a file, the network or another process.
//!
//! The server starts the worker with an empty environment, only its three pipes as
//! descriptors (everything else the server opens is close-on-exec), and kills it at the
//! request's deadline; this file is the worker's own half.

use super::super::protocol::Ready;
use nix::sys::resource::{getrlimit, getrusage, setrlimit, Resource, UsageWho};

const MIB: u64 = 1024 * 1024;

/// What the server tells a worker on its command line.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkerLimits {
    /// Memory the worker may allocate for user code, on top of its own size at start.
    #[arg(long, default_value_t = 256)]
    pub memory_mib: u64,
}

/// Confines this process; what the server is told about it.
pub fn apply(limits: &WorkerLimits) -> Result<Ready, String> {
    let extra_descriptors = extra_descriptors();
    nix::sys::prctl::set_no_new_privs().map_err(|e| format!("no_new_privs: {e}"))?;
    // Without /proc (some containers), a generous allowance for the binary's own mappings.
    let own_size = own_address_space().unwrap_or(256 * MIB);
    let address_space = own_size + limits.memory_mib * MIB;
    limit(Resource::RLIMIT_AS, address_space)?;
    limit(Resource::RLIMIT_CORE, 0)?;
    limit(Resource::RLIMIT_FSIZE, 0)?;
    limit(Resource::RLIMIT_NOFILE, 16)?;
    let syscall_filter = filter::apply()?;
    Ok(Ready { version: super::super::protocol::VERSION.to_owned(), syscall_filter, extra_descriptors })
}

/// Lets the next request use the CPU for its deadline (rounded up) and a second more.
pub fn limit_cpu_for(deadline_ms: u64) {
    let Ok(usage) = getrusage(UsageWho::RUSAGE_SELF) else { return };
    let used = (usage.user_time().tv_sec() + usage.system_time().tv_sec()) as u64 + 1;
    let Ok((_, hard)) = getrlimit(Resource::RLIMIT_CPU) else { return };
    let soft = (used + deadline_ms.div_ceil(1000) + 1).min(hard);
    let _ = setrlimit(Resource::RLIMIT_CPU, soft, hard);
}

fn limit(resource: Resource, value: u64) -> Result<(), String> {
    setrlimit(resource, value, value).map_err(|e| format!("{resource:?}: {e}"))
}

/// `VmSize` of this process, in bytes.
fn own_address_space() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmSize:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Descriptors open other than 0, 1 and 2 (reading the directory opens one, not counted).
fn extra_descriptors() -> usize {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else { return 0 };
    let names: Vec<_> = entries.filter_map(|e| e.ok()?.file_name().into_string().ok()?.parse::<u32>().ok()).collect();
    names.iter().filter(|&&fd| fd > 2).count().saturating_sub(1)
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
mod filter {
    use seccompiler::SeccompRule;
    use seccompiler::{BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter};
    use std::collections::BTreeMap;

    /// Syscalls the worker has no use for once confined.
    #[rustfmt::skip]
    const REFUSED: &[i64] = &[
        // files: opening, creating, changing, removing
        libc::SYS_openat, libc::SYS_openat2, libc::SYS_open_by_handle_at, libc::SYS_name_to_handle_at,
        libc::SYS_mkdirat, libc::SYS_mknodat, libc::SYS_unlinkat, libc::SYS_renameat2, libc::SYS_linkat,
        libc::SYS_symlinkat, libc::SYS_fchmodat, libc::SYS_fchownat, libc::SYS_truncate, libc::SYS_chdir,
        // network
        libc::SYS_socket, libc::SYS_socketpair, libc::SYS_connect, libc::SYS_bind, libc::SYS_listen,
        libc::SYS_accept, libc::SYS_accept4,
        // processes and threads
        libc::SYS_execve, libc::SYS_execveat, libc::SYS_clone, libc::SYS_clone3, libc::SYS_kill,
        libc::SYS_ptrace, libc::SYS_process_vm_readv, libc::SYS_process_vm_writev, libc::SYS_pidfd_open,
        libc::SYS_setns, libc::SYS_unshare,
        // the system
        libc::SYS_mount, libc::SYS_umount2, libc::SYS_pivot_root, libc::SYS_chroot, libc::SYS_init_module,
        libc::SYS_finit_module, libc::SYS_delete_module, libc::SYS_kexec_load, libc::SYS_bpf,
        libc::SYS_perf_event_open, libc::SYS_userfaultfd, libc::SYS_io_uring_setup, libc::SYS_keyctl,
        libc::SYS_add_key, libc::SYS_request_key, libc::SYS_reboot, libc::SYS_swapon, libc::SYS_swapoff,
        // signals to others, and other processes' scheduling (a worker runs as the server's user)
        libc::SYS_tkill, libc::SYS_rt_sigqueueinfo, libc::SYS_rt_tgsigqueueinfo, libc::SYS_pidfd_send_signal,
        libc::SYS_setpriority, libc::SYS_sched_setaffinity, libc::SYS_sched_setscheduler,
        libc::SYS_sched_setparam, libc::SYS_ioprio_set,
        // files changed by path, and shared memory and queues between processes
        libc::SYS_setxattr, libc::SYS_lsetxattr, libc::SYS_removexattr, libc::SYS_lremovexattr,
        libc::SYS_utimensat, libc::SYS_mq_open, libc::SYS_mq_unlink, libc::SYS_shmget, libc::SYS_shmat,
        libc::SYS_msgget, libc::SYS_semget,
    ];

    /// The older forms x86_64 still has beside the `*at` ones.
    #[cfg(target_arch = "x86_64")]
    #[rustfmt::skip]
    const REFUSED_LEGACY: &[i64] = &[
        libc::SYS_open, libc::SYS_creat, libc::SYS_mkdir, libc::SYS_mknod, libc::SYS_unlink, libc::SYS_rmdir,
        libc::SYS_rename, libc::SYS_renameat, libc::SYS_link, libc::SYS_symlink, libc::SYS_chmod,
        libc::SYS_chown, libc::SYS_lchown, libc::SYS_fork, libc::SYS_vfork, libc::SYS_utime, libc::SYS_utimes,
        libc::SYS_futimesat,
    ];
    #[cfg(not(target_arch = "x86_64"))]
    const REFUSED_LEGACY: &[i64] = &[];

    /// Syscalls that act on a descriptor (their first argument): refused on any descriptor but
    /// the worker's three pipes. The server opens everything close-on-exec, but whatever
    /// started the server may have left descriptors open that reach the worker too (a test
    /// runner's jobserver pipe, say); without `unsafe` the worker cannot close them, so it
    /// cannot use them instead.
    #[rustfmt::skip]
    const PIPES_ONLY: &[i64] = &[
        libc::SYS_read, libc::SYS_write, libc::SYS_readv, libc::SYS_writev, libc::SYS_pread64,
        libc::SYS_pwrite64, libc::SYS_preadv, libc::SYS_pwritev, libc::SYS_preadv2, libc::SYS_pwritev2,
        libc::SYS_sendto, libc::SYS_recvfrom, libc::SYS_sendmsg, libc::SYS_recvmsg, libc::SYS_sendmmsg,
        libc::SYS_recvmmsg, libc::SYS_ioctl, libc::SYS_fcntl, libc::SYS_dup, libc::SYS_dup3, libc::SYS_lseek,
        libc::SYS_getdents64, libc::SYS_fchdir, libc::SYS_fchmod, libc::SYS_fchown, libc::SYS_ftruncate,
        libc::SYS_fsync, libc::SYS_splice, libc::SYS_tee, libc::SYS_sendfile, libc::SYS_copy_file_range,
        libc::SYS_flock, libc::SYS_shutdown, libc::SYS_getsockopt, libc::SYS_setsockopt,
        libc::SYS_getpeername, libc::SYS_getsockname, libc::SYS_fsetxattr, libc::SYS_fremovexattr,
    ];

    /// x86_64's `dup2`, refused on an inherited descriptor like `dup3`.
    #[cfg(target_arch = "x86_64")]
    const PIPES_ONLY_LEGACY: &[i64] = &[libc::SYS_dup2];
    #[cfg(not(target_arch = "x86_64"))]
    const PIPES_ONLY_LEGACY: &[i64] = &[];

    fn rule(conditions: Vec<(u8, SeccompCmpOp, u64)>) -> Result<SeccompRule, String> {
        let conditions = conditions
            .into_iter()
            .map(|(arg, op, value)| SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("seccomp: {e}"))?;
        SeccompRule::new(conditions).map_err(|e| format!("seccomp: {e}"))
    }

    pub fn apply() -> Result<bool, String> {
        let mut rules =
            REFUSED.iter().chain(REFUSED_LEGACY).map(|&call| (call, Vec::new())).collect::<BTreeMap<_, _>>();
        for &call in PIPES_ONLY.iter().chain(PIPES_ONLY_LEGACY) {
            rules.insert(call, vec![rule(vec![(0, SeccompCmpOp::Gt, 2)])?]);
        }
        // Mapping an inherited descriptor (an anonymous mapping passes -1).
        rules.insert(
            libc::SYS_mmap,
            vec![rule(vec![(4, SeccompCmpOp::Gt, 2), (4, SeccompCmpOp::Ne, u64::from(u32::MAX))])?],
        );
        // `abort()` signals the worker itself; any other process is refused.
        let own = u64::from(std::process::id());
        rules.insert(libc::SYS_tgkill, vec![rule(vec![(0, SeccompCmpOp::Ne, own)])?]);
        // Resource limits of itself only (pid 0 or its own).
        rules.insert(libc::SYS_prlimit64, vec![rule(vec![(0, SeccompCmpOp::Ne, 0), (0, SeccompCmpOp::Ne, own)])?]);
        let arch = std::env::consts::ARCH.try_into().map_err(|e| format!("seccomp: {e}"))?;
        let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
            .map_err(|e| format!("seccomp: {e}"))?;
        let program: BpfProgram = filter.try_into().map_err(|e| format!("seccomp: {e}"))?;
        seccompiler::apply_filter(&program).map_err(|e| format!("seccomp: {e}"))?;
        Ok(true)
    }
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
mod filter {
    /// No seccomp here: the resource limits and the server's deadline still hold.
    pub fn apply() -> Result<bool, String> {
        Ok(false)
    }
}
