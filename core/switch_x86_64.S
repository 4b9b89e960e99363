/* SPDX-License-Identifier: MIT */
/*
 * The fiber switch on x86-64 (System V ABI), with the interface of
 * Boost.Context's fcontext that core/fiber.c uses on other architectures:
 *
 *   transfer_t pc__fctx_jump(fcontext_t to, void *data);
 *   fcontext_t pc__fctx_make(void *stack_top, size_t size, void (*fn)(transfer_t));
 *
 * A context is a stack pointer with the caller's saved registers on top:
 * rbp, rbx, r15 .. r12 pushed below the return address. The jump pushes
 * them, switches stacks, pops the other context's and "returns" into it
 * with rax:rdx = {the context it came from, data}: a transfer_t return
 * value, and for a new context, in rdi:rsi, the transfer_t argument of its
 * entry function.
 *
 * Unlike fcontext it does not save the floating-point control state (SSE
 * MXCSR, x87 control word): the stmxcsr and fnstcw that would save it
 * take as long as the rest of the switch. That state stays the worker
 * thread's, as a goroutine's does (pc_fiber.h says so).
 *
 * The jump returns through an indirect jmp, not a ret: a ret would take
 * the return stack buffer's prediction, the call into this side of the
 * jump, and miss on every switch.
 */
#if defined(__x86_64__) && defined(__LP64__)

        .text
        .globl  pc__fctx_jump
        .hidden pc__fctx_jump
        .type   pc__fctx_jump, @function
        .align  16
pc__fctx_jump:
        pushq   %rbp
        pushq   %rbx
        pushq   %r15
        pushq   %r14
        pushq   %r13
        pushq   %r12
        movq    %rsp, %rax      /* the context we leave */
        movq    %rdi, %rsp
        popq    %r12
        popq    %r13
        popq    %r14
        popq    %r15
        popq    %rbx
        popq    %rbp
        popq    %r8             /* where the other side resumes */
        movq    %rsi, %rdx      /* data */
        movq    %rax, %rdi      /* {from, data} also as a new entry's argument */
        jmpq    *%r8
        .size   pc__fctx_jump, .-pc__fctx_jump

/*
 * A new context below @stack_top (aligned down to 16): six register slots,
 * then @fn where the jump finds a return address, then a null return
 * address for @fn, which must never return. @fn then starts with %rsp + 8
 * aligned to 16, as after a call. @size is not needed here.
 */
        .globl  pc__fctx_make
        .hidden pc__fctx_make
        .type   pc__fctx_make, @function
        .align  16
pc__fctx_make:
        movq    %rdi, %rax
        andq    $-16, %rax
        leaq    -64(%rax), %rax
        movq    $0, 40(%rax)    /* rbp: the end of a frame chain */
        movq    %rdx, 48(%rax)
        movq    $0, 56(%rax)
        ret
        .size   pc__fctx_make, .-pc__fctx_make

#endif
        .section .note.GNU-stack, "", @progbits
