package notice

// The messages' words, by language and key; values are fmt formats. The
// next.* phrases are the member page's (server/web/locales), dates in
// YYYY-MM-DD here: TestStepPhrasesMatchThePage keeps them the same.
var catalogues = map[string]map[string]string{
	"en": {
		// A line: what happened, then what to do, each a sentence.
		"order":          "Order %d",
		"order.named":    "Order %d (%s)",
		"order.in":       "order %d",
		"order.named.in": "order %d (%s)",
		"line":           "%s. %s",

		"event.order.renewed":        "%s was renewed as order %d",
		"event.order.status_changed": "%s is now %s",
		"event.order.reissued":       "%s has a new certificate",
		"event.order.expiring":       "The certificate of %s ends on %s",
		"event.order.plan_ending":    "The plan of %s ends on %s",
		"event.other":                "%s: %s",

		"line.next.reissue":           "Reissue by %s.",
		"line.next.renew":             "Renew the contract by %s.",
		"line.next.issue_renewal":     "Get renewal %d issued by %s.",
		"line.next.renewed":           "Follow order %d from now on.",
		"line.next.ended":             "Nothing more to do.",
		"line.next.awaiting_issuance": "Your ACME client is to have it issued.",
		"line.next.renewal_pending":   "Renewal %d awaits issuance; nothing is due yet.",
		"line.next.plan_unknown":      "Nothing is due yet (the plan's end is not stated).",
		"line.next.plan_unknown_due":  "Reissue or renew by %s (the plan's end is not stated).",
		"line.next.none":              "Nothing is due yet.",

		"what.order.renewed":        "Order %d was renewed: the renewal is order %d.",
		"what.order.status_changed": "The status of order %d changed from %s to %s.",
		"what.order.reissued":       "A new certificate was issued on order %d, valid till %s.",
		"what.order.expiring":       "The certificate of order %d ends on %s, and the order has no issued renewal.",
		"what.order.plan_ending":    "The plan (the contract) of order %d ends on %s, and it has no renewal.",

		"field.common_name":      "Common name",
		"field.certificate_ends": "Certificate ends",
		"field.plan_ends":        "Plan ends",
		"field.next_step":        "Next step",
		"not_stated":             "not stated",
		"open":                   "Open the order: %s",

		"footer.why":         "You get this message because %s is subscribed to certorder notices for member %s.",
		"footer.unsubscribe": "Unsubscribe with one click:",
		"footer.manage":      "Choose what you receive, or remove the address, on the web page:",

		"digest.subject": "certorder: %d more events for member %s on %s",
		"digest.intro":   "More than %d events concerned the orders of member %s on %s. The first %d came one by one; here are the others, in one message:",
		"digest.more":    "%d more events of that day are not listed here, to keep this message small. Every order's state and next step is on the web page:",

		"test.subject": "A test message from certorder for member %s",
		"test.text":    "This is a test message from certorder, sent to %s for member %s to check that its notices arrive.",
		"test.nothing": "Nothing needs doing.",

		"confirm.subject": "Confirm your address for certorder notices",
		"confirm.text":    "Member %s of the certorder service at %s asked for notices about its orders to be sent to %s.",
		"confirm.action":  "To receive them, open this link within %d hours and press Confirm:",
		"confirm.ignore":  "If you did not expect this message, ignore it: nothing more is sent unless the link above is opened.",
		"confirm.block":   "To refuse this and every later request to send certorder messages to this address, open this link and press Refuse:",

		"next.reissue":           "Reissue by %s",
		"next.renew":             "Renew the contract by %s",
		"next.issue_renewal":     "Get renewal %d issued by %s",
		"next.renewed":           "Renewed as %d",
		"next.ended":             "Ended: nothing more to do",
		"next.awaiting_issuance": "Awaiting issuance by your ACME client",
		"next.renewal_pending":   "Renewal %d awaits issuance; nothing due yet",
		"next.plan_unknown":      "Nothing due yet (the plan's end is not stated)",
		"next.plan_unknown_due":  "Reissue or renew by %s (the plan's end is not stated)",
		"next.none":              "Nothing due yet",
	},
	"ja": {
		"order":          "注文 %d",
		"order.named":    "注文 %d (%s)",
		"order.in":       "注文 %d",
		"order.named.in": "注文 %d (%s)",
		"line":           "%s。%s",

		"event.order.renewed":        "%s は注文 %d に更新されました",
		"event.order.status_changed": "%s の状態が %s になりました",
		"event.order.reissued":       "%s に新しい証明書が発行されました",
		"event.order.expiring":       "%s の証明書は %s に期限を迎えます",
		"event.order.plan_ending":    "%s の契約は %s に終了します",
		"event.other":                "%s：%s",

		"line.next.reissue":           "%s までに再発行してください。",
		"line.next.renew":             "%s までに契約を更新してください。",
		"line.next.issue_renewal":     "%[2]s までに更新注文 %[1]d を発行してください。",
		"line.next.renewed":           "今後は注文 %d をご確認ください。",
		"line.next.ended":             "これ以上の手続きは不要です。",
		"line.next.awaiting_issuance": "ACME クライアントによる発行を待っています。",
		"line.next.renewal_pending":   "更新注文 %d の発行を待っています（期限はまだ先です）。",
		"line.next.plan_unknown":      "現在、対応は不要です（契約の終了日の記載なし）。",
		"line.next.plan_unknown_due":  "%s までに再発行または更新してください（契約の終了日の記載なし）。",
		"line.next.none":              "現在、対応は不要です。",

		"what.order.renewed":        "注文 %d が更新されました。更新注文は注文 %d です。",
		"what.order.status_changed": "注文 %d の状態が %s から %s に変わりました。",
		"what.order.reissued":       "注文 %d に新しい証明書が発行されました（有効期限 %s）。",
		"what.order.expiring":       "注文 %d の証明書は %s に期限を迎えます。発行済みの更新注文はありません。",
		"what.order.plan_ending":    "注文 %d の契約は %s に終了します。更新注文はありません。",

		"field.common_name":      "コモンネーム",
		"field.certificate_ends": "証明書の有効期限",
		"field.plan_ends":        "契約の終了日",
		"field.next_step":        "次の手順",
		"not_stated":             "記載なし",
		"open":                   "注文を開く：%s",

		"footer.why":         "このメールは、%s がメンバー %s の certorder 通知の宛先に登録されているため送信されています。",
		"footer.unsubscribe": "ワンクリックで配信停止：",
		"footer.manage":      "受け取る通知の選択や宛先の削除は Web ページで行えます：",

		"digest.subject": "certorder：メンバー %[2]s の %[3]s のイベント（ほか %[1]d 件）",
		"digest.intro":   "%[3]s にメンバー %[2]s の注文について %[1]d 件を超えるイベントがありました。最初の %[4]d 件は個別にお送りしました。残りをまとめてお送りします：",
		"digest.more":    "メールを小さく保つため、この日のほか %d 件のイベントはここに載せていません。すべての注文の状態と次の手順は Web ページで確認できます：",

		"test.subject": "certorder からのテストメッセージ（メンバー %s）",
		"test.text":    "これは certorder からのテストメッセージです。メンバー %[2]s の通知が届くことを確かめるため、%[1]s に送りました。",
		"test.nothing": "対応は不要です。",

		"confirm.subject": "certorder 通知の宛先の確認",
		"confirm.text":    "certorder サービス（%[2]s）のメンバー %[1]s が、注文に関する通知を %[3]s に送るよう依頼しました。",
		"confirm.action":  "通知を受け取るには、%d 時間以内に次のリンクを開き、「確認」を押してください：",
		"confirm.ignore":  "お心当たりのない場合は、このメールを無視してください。上のリンクを開かない限り、今後メールは送信されません。",
		"confirm.block":   "このアドレスへの certorder からのメールの依頼を今後すべて拒否するには、次のリンクを開き、「拒否」を押してください：",

		"next.reissue":           "%s までに再発行",
		"next.renew":             "%s までに契約を更新",
		"next.issue_renewal":     "%[2]s までに更新注文 %[1]d を発行",
		"next.renewed":           "注文 %d に更新済み",
		"next.ended":             "終了（手続きは不要です）",
		"next.awaiting_issuance": "ACME クライアントによる発行待ち",
		"next.renewal_pending":   "更新注文 %d の発行待ち（期限はまだ先です）",
		"next.plan_unknown":      "対応不要（契約の終了日の記載なし）",
		"next.plan_unknown_due":  "%s までに再発行または更新（契約の終了日の記載なし）",
		"next.none":              "対応不要",
	},
}
