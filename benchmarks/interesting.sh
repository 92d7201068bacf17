#!/bin/bash
# usage: interesting.sh CASE FILE
# Exit 0 when FILE still shows the failure of benchmark case CASE (see README.md), 1 otherwise.
# This is the plain text-matching test that a generic reducer (C-Vise, Shrink Ray, Picire) would use;
# it is deliberately naive: a reduced file that passes it may still have slipped to another bug.
# PY names the interpreter (default python3); it needs jax, jaxlib and enzyme-ad installed (flax, optax and
# equinox for the library cases: pip install -e '.[enzyme,bench]').
case=$1 file=$2
PY=${PY:-python3}
out=$(mktemp)
# run where the file is, as its header says (a written-back reproducer reads inputs.npz beside it)
(cd "$(dirname "$file")" && timeout 120 "$PY" "$(basename "$file")") >"$out" 2>&1
rc=$?
ok=1
has() { grep -qF -- "$1" "$out"; }
case $case in
  mlp_reduce_precision_enzyme) has 'could not compute the adjoint for this operation' && has 'stablehlo.reduce_precision' && ok=0 ;;
  gp_cholesky_enzyme) has 'could not compute the adjoint for this operation' && has 'lapack_spotrf_ffi' && ok=0 ;;
  newton_while_loop) has 'Reverse-mode differentiation does not work for lax.while_loop' && ok=0 ;;
  custom_vjp_clip) has 'Custom VJP bwd rule must produce an output with the same container (pytree) structure' && ok=0 ;;
  dirichlet_digamma_enzyme) [[ $rc != 0 ]] && has 'gradient mismatch between Enzyme-JAX and JAX' && ok=0 ;;
  custom_jvp_nonlinear) has 'AssertionError' && has 'ValAccum' && ok=0 ;;
  robust_median_enzyme) [[ $rc == 139 || $rc == 134 ]] && ok=0 ;;
  flax_linen_moe_topk_enzyme) has 'could not compute the adjoint for this operation' && has 'chlo.top_k' && ok=0 ;;
  nnx_decay_cumprod_enzyme) has 'Unsupported reduce window rev autodiff' && ok=0 ;;
  equinox_spectral_eigh_enzyme) has 'could not compute the adjoint for this operation' && has 'lapack_ssyevd_ffi' && ok=0 ;;
  flax_linen_rnn_schur) has "Differentiation rule for 'schur' not implemented" && ok=0 ;;
  equinox_householder_flow) has "Differentiation rule for 'householder_product' not implemented" && ok=0 ;;
  equinox_quantize_custom_vjp) has 'Custom VJP bwd rule must produce an output with the same container (pytree) structure' && ok=0 ;;
  nnx_softclip_custom_jvp) has 'AssertionError' && has 'ValAccum' && ok=0 ;;
  equinox_moments_rank7_segfault) [[ $rc == 139 || $rc == 134 ]] && ok=0 ;;
  flax_linen_evidential_digamma_enzyme) [[ $rc != 0 ]] && has 'gradient mismatch between Enzyme-JAX and JAX' && ok=0 ;;
  nnx_vae_tracer_bool) has 'TracerBoolConversionError' && ok=0 ;;
  equinox_clip_while_tracer) has 'TracerBoolConversionError' && ok=0 ;;
  flax_linen_pointcloud_jit_miscompare) [[ $rc != 0 ]] && has 'AssertionError' && ok=0 ;;
  sensor_quantise_magic_round_jit) [[ $rc != 0 ]] && has 'AssertionError' && ok=0 ;;
  flax_linen_pendulum_callback_vmap) has 'vmap is only supported for the pure_callback primitive' && ok=0 ;;
  flax_linen_force_matching_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  equinox_layernorm_sqrt_nan) has 'FloatingPointError' && has 'NaN in gradients' && ok=0 ;;
  flax_linen_angular_arccos_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_entropy_bonus_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  flax_notebook_onehot_jit) has 'ConcretizationTypeError' && has 'Abstract tracer value encountered' && ok=0 ;;
  equinox_rbf_flags_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  equinox_param_newton_norm) has 'Reverse-mode differentiation does not work for lax.while_loop' && ok=0 ;;
  flax_linen_absl_huber_tracer) has 'TracerBoolConversionError' && ok=0 ;;
  nnx_ratio_where_div_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  equinox_enzyme_td_stop_gradient) [[ $rc != 0 ]] && has 'AssertionError' && has 'Not equal to tolerance' && ok=0 ;;
  flax_linen_numpy_reference_test) [[ $rc != 0 ]] && has 'AssertionError' && has 'Not equal to tolerance' && ok=0 ;;
  flax_linen_enzyme_relu_tie_test) [[ $rc != 0 ]] && has 'AssertionError' && has 'Not equal to tolerance' && ok=0 ;;
  equinox_optax_chain_loss_rises) has 'AssertionError' && has 'loss did not fall' && ok=0 ;;
  nnx_inject_hyperparams_ascent_test) has 'AssertionError' && has 'loss did not decrease' && ok=0 ;;
  nnx_resize_reference_test) [[ $rc != 0 ]] && has 'AssertionError' && has 'Not equal to tolerance' && ok=0 ;;
  equinox_sac_arctanh_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  equinox_softplus_overflow_reference) [[ $rc != 0 ]] && has 'AssertionError' && has 'inf location mismatch' && ok=0 ;;
  flax_linen_masked_sqrt_grad_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_pairwise_norm_zero_grad_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  flax_linen_softmax_underflow_log_loss) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  flax_linen_optax_misconfigured_chain_rises) has 'AssertionError' && has 'training made things worse' && ok=0 ;;
  nnx_sincnet_enzyme_gradient_mismatch) [[ $rc != 0 ]] && has 'AssertionError' && has 'nan location mismatch' && ok=0 ;;
  eqx_poisson_rate_log1p_grad_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_logits_overflow_reference_test) [[ $rc != 0 ]] && has 'AssertionError' && has 'inf location mismatch' && ok=0 ;;
  eqx_cosine_sim_zero_vector_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_logsumexp_by_hand_overflow_reference) [[ $rc != 0 ]] && has 'AssertionError' && ok=0 ;;
  nnx_logsumexp_by_hand_reference_test) [[ $rc != 0 ]] && has 'AssertionError' && has 'inf location mismatch' && ok=0 ;;
  linen_softplus_log1p_exp_loss_nan) has 'AssertionError' && has 'non-finite loss' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_softmax_by_hand_overflow_nan) has 'AssertionError' && has 'non-finite attention weights' && [[ $rc == 1 ]] && ok=0 ;;
  linen_mdn_logsumexp_underflow) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_masked_log_grads_tree_check) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_cross_entropy_by_hand_reference_test) has 'AssertionError' && has 'nan location mismatch' && ok=0 ;;
  linen_arcsin_angle_grad_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_huber_where_sqrt_grad_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  linen_gram_cholesky_nan) has 'FloatingPointError' && has 'loss became nan' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_logcosh_overflow_reference_test) [[ $rc != 0 ]] && has 'AssertionError' && has 'inf location mismatch' && ok=0 ;;
  nnx_triplet_norm_zero_grad_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_contrastive_zero_row_div_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  linen_logsigmoid_where_grad_nan) has 'FloatingPointError' && has 'non-finite gradient norm' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_tempered_softmax_log_underflow) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_vonmises_i0_overflow_reference) [[ $rc != 0 ]] && has 'AssertionError' && ok=0 ;;
  linen_poisson_rate_exp_overflow_reference) [[ $rc != 0 ]] && has 'AssertionError' && ok=0 ;;
  nnx_quantile_huber_pow_half_grad_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  linen_log_sigmoid_by_hand_bce_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_masked_power_gain_grad_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_logcosh_overflow_reference) [[ $rc != 0 ]] && has 'AssertionError' && has 'inf location mismatch' && ok=0 ;;
  linen_contrastive_norm_zero_grad_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_gaussian_nll_check_helper) [[ $rc != 0 ]] && has 'AssertionError' && has 'inf location mismatch' && ok=0 ;;
  linen_huber_inf_minus_inf_nan) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_temperature_softmax_log_underflow) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_thermal_softplus) [[ $rc != 0 ]] && has 'AssertionError' && ok=0 ;;
  flax_grouplasso_regression) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  hmm_forward_likelihood) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_masked_mape) has 'non-finite gradient' && [[ $rc == 1 ]] && ok=0 ;;
  linen_barometer_window_norm_onepass_var) has 'AssertionError: non-finite' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_magnetometer_turn_rate_arccos) has 'ValueError: NaN' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_fraud_logloss_sigmoid_saturates) has 'nan location mismatch' && [[ $rc == 1 ]] && ok=0 ;;
  jax_ordinal_ratings_cdf_difference) has 'FloatingPointError: invalid value (nan) encountered in mul' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_sensor_norm_onepass_var) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_survival_hazard_log1m_sigmoid_debug_nans) has 'FloatingPointError: invalid value (nan) encountered in mul' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_cluster_energy_radius_of_gyration_debug_nans) has 'FloatingPointError: invalid value (nan) encountered in sqrt' && [[ $rc == 1 ]] && ok=0 ;;
  linen_pk_clearance_masked_log_underflow_grad_check) has 'AssertionError: gradient has NaN/Inf' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_listing_triplet_embedding_norm_duplicate_grad_check) has 'ValueError: non-finite gradient norm' && [[ $rc == 1 ]] && ok=0 ;;
  linen_simclr_checkify_softmax_overflow) has 'nan generated by primitive: div' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_revin_forecaster_error_if_negative_variance) has 'EquinoxRuntimeError: Forecaster produced a non-finite prediction' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_siamese_chex_norm_grad_at_zero) has 'assert_tree_all_finite failed: Tree contains non-finite value' && [[ $rc == 1 ]] && ok=0 ;;
  linen_demand_forecast_debug_nans_missed) has 'was not skipped' && [[ $rc == 1 ]] && ok=0 ;;
  test_eqx_lognormal_head_debug_nans_missed) has 'DID NOT RAISE FloatingPointError' && ok=0 ;;
  nnx_sensor_counts_debug_infs_missed) has 'was not rejected by jax_debug_infs' && ok=0 ;;
  eqx_credit_mlp_gradcheck_bce_log1m_sigmoid) has 'nan location mismatch' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_event_time_modf) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  test_robust_scaler_fp16) has 'inf location mismatch' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_sensor_auc_trapezoid) has 'non-finite features' && [[ $rc == 1 ]] && ok=0 ;;
  linen_temperature_nll) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_cosine_retrieval_padding) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  test_nnx_ctr_bce) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_trajectory_padded_norm_grad_exit) has 'non-finite gradients' && [[ $rc == 1 ]] && ok=0 ;;
  linen_bessel_basis_scipy_reference) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  linen_house_price_log_exit) has 'loss became nan' && [[ $rc == 1 ]] && ok=0 ;;
  linen_chi2_calibration_logpdf) has 'nan location mismatch' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_layernorm_padded_sqrt_grad_exit) has 'non-finite gradients' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_int8_magic_round_jit) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  linen_censored_t_hyp2f1_cdf) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_waiting_time_gamma_logpdf_grad) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_parametric_mds_norm_grad) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_heading_vonmises_uniform_prior) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  linen_detector_expon_logcdf_censored) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_contrastive_pairwise_sqrt_grad) has 'FloatingPointError' && has 'became nan' && [[ $rc == 1 ]] && ok=0 ;;
  test_credit_logreg_sigmoid_underflow) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  linen_nb_counts_poch_overflow) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  nnx_gamma_survival_logsf_censored) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  test_wrapcauchy_heading_logpdf) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  linen_censored_gamma_lod) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  eqx_seebeck_fermi_dirac) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  test_truncnorm_regression) has 'AssertionError' && [[ $rc == 1 ]] && ok=0 ;;
  *) echo "unknown case $case" >&2; rm -f "$out"; exit 2 ;;
esac
rm -f "$out"
exit $ok
