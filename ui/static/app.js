// The app's one script: ask, stream the steps over Server-Sent Events, stop, follow up, browse past sessions.
// Every text from the model or the web goes in with textContent, never as HTML.
(function(){
"use strict";
var $=function(s){return document.querySelector(s);};
var conv=null, events=null, running=false;

function el(tag, cls, text){
  var e=document.createElement(tag); if(cls) e.className=cls; if(text!==undefined&&text!==null) e.textContent=text;
  return e;
}
function money(c){return c===null||c===undefined?"n/a":"$"+Number(c).toFixed(4);}
// Only http(s) links, and none to this machine: the browser would send the app's token cookie to any port of it.
function safeHref(url){
  if(!/^https?:\/\//i.test(url||"")) return null;
  var host; try{ host=new URL(url).hostname.toLowerCase().replace(/\.$/,""); }catch(e){ return null; }
  var local=host==="localhost"||/\.localhost$/.test(host)||/^127\./.test(host)||host==="0.0.0.0"||
    host==="[::1]"||host==="[::]"||/^\[::ffff:(7f|127\.)/.test(host);
  return local?null:url;
}
function post(url, body){
  return fetch(url,{method:"POST",body:body,credentials:"same-origin"}).then(function(r){
    return r.json().then(function(j){ if(!r.ok) throw new Error(j.error||r.statusText); return j; });
  });
}
function status(text){$("#status").textContent=text||"";}
function setRunning(on){
  running=on; $("#stop").classList.toggle("hidden",!on); $("#send").disabled=on;
}

function turnEl(index, question, attachment){
  var t=el("article","turn"); t.dataset.turn=index;
  t.appendChild(el("p","question",question));
  if(attachment) t.appendChild(el("p","attachment","Attachment: "+attachment));
  t.appendChild(el("ol","steps")); $("#turns").appendChild(t); return t;
}
function findTurn(index){return $('#turns .turn[data-turn="'+index+'"]');}

function renderStep(turn, s){
  var list=turn.querySelector(".steps"), li=list.querySelector('[data-n="'+s.number+'"]');
  if(!li){li=el("li","step"); li.dataset.n=s.number; list.appendChild(li);}
  li.textContent=""; li.classList.toggle("error",!!s.error);
  li.appendChild(el("span","n","Step "+s.number));
  if(s.thought) li.appendChild(el("p","thought",s.thought));
  if(s.tool){
    var call=el("div","call"); call.appendChild(el("b",null,s.tool));
    if(s.input) call.appendChild(document.createTextNode("\n"+s.input));
    li.appendChild(call);
  }
  if(s.observation){
    var lines=s.observation.split("\n");
    if(lines.length>4){
      var d=el("details","obs"), sum=el("summary",null,lines.slice(0,4).join("\n")+"\n… "+(lines.length-4)+" more lines");
      d.appendChild(sum); d.appendChild(el("div",null,lines.slice(4).join("\n"))); li.appendChild(d);
    } else li.appendChild(el("div","obs",s.observation));
  }
}

function renderAnswer(turn, a){
  var box=turn.querySelector(".answer"); if(box) box.remove();
  box=el("section","answer"+(a.answered?"":" failed")); box.appendChild(el("h3",null,a.answered?"Answer":"No answer ("+a.status+")"));
  box.appendChild(el("div","text",a.answer||a.error||""));
  var verdicts={};
  (a.citations||[]).forEach(function(c){ var v=(verdicts[c.n]=verdicts[c.n]||[]); v.push(c.verdict); if(c.retracted&&v.indexOf("retracted")<0) v.push("retracted"); });
  if((a.sources||[]).length){
    box.appendChild(el("h4",null,"Sources"));
    var ol=el("ol","sources");
    a.sources.forEach(function(s){
      var li=el("li"); li.value=s.n; var href=safeHref(s.url);
      var link=el(href?"a":"span",null,s.title||s.url); if(href){link.href=href; link.rel="noreferrer noopener"; link.target="_blank";}
      li.appendChild(link);
      if(!href&&s.title&&s.url) li.appendChild(el("span","where"," — "+s.url));
      if(s.read===false) li.appendChild(el("span","verdict not_read","not read"));
      (verdicts[s.n]||[]).forEach(function(v){li.appendChild(el("span","verdict "+v,v.replace("_"," ")));});
      ol.appendChild(li);
    });
    box.appendChild(ol);
  }
  var unlisted=(a.citations||[]).filter(function(c){return !(a.sources||[]).some(function(s){return s.n===c.n;});});
  unlisted.forEach(function(c){ box.appendChild(el("p","meta","["+(c.n===null?"?":c.n)+"] "+c.verdict+(c.retracted?" (cites a retracted paper)":"")+": "+(c.claim||c.url||""))); });
  box.appendChild(el("p","meta",(a.tokens||0)+" tokens · "+money(a.cost)+" · "+(a.steps||0)+" steps"));
  turn.appendChild(box);
}

function listen(id){
  if(events) events.close();
  events=new EventSource("/api/events/"+encodeURIComponent(id));
  events.onmessage=function(m){
    var e=JSON.parse(m.data), turn=findTurn(e.turn);
    if(!turn) turn=turnEl(e.turn, e.question||"", null);
    if(e.type==="step") renderStep(turn, e.step);
    else if(e.type==="usage") $("#usage").textContent=e.tokens+" tokens · "+money(e.cost)+" so far";
    else if(e.type==="answer"){ renderAnswer(turn, e.answer); status("working…"); }
    else if(e.type==="notice") status(e.text);  /* a retry, a timeout, a long wait for the model: as text */
  };
  events.addEventListener("end",function(){
    events.close(); events=null; setRunning(false); status(""); loadHistory();
  });
}

function ask(ev){
  ev.preventDefault(); if(running) return;
  var q=$("#question").value.trim(); if(!q) return;
  var fd=new FormData(); fd.append("question",q); fd.append("conversation",conv||"");
  var f=$("#file").files[0]; if(f) fd.append("file",f);
  setRunning(true); status("working…");
  post("/api/ask",fd).then(function(r){
    conv=r.conversation; turnEl(r.turn,q,f?f.name:null);
    $("#question").value=""; $("#file").value=""; listen(conv);
  }).catch(function(err){ setRunning(false); status("error: "+err.message); });
}

function stop(){
  if(conv) post("/api/stop/"+encodeURIComponent(conv),new FormData()).then(function(){ if(running) status("stopping after the step under way…"); });
}

function fresh(){
  if(events){events.close(); events=null;}
  conv=null; setRunning(false); $("#turns").textContent=""; $("#usage").textContent=""; status("");
  $("#readonly").classList.add("hidden"); $("#ask").classList.remove("hidden"); $("#question").focus();
  document.querySelectorAll("#history a.current").forEach(function(a){a.classList.remove("current");});
}

function openPast(item, link){
  fetch("/api/conversations/"+encodeURIComponent(item.id)).then(function(r){return r.json();}).then(function(c){
    fresh(); link.classList.add("current");
    $("#readonly").classList.remove("hidden"); $("#ask").classList.add("hidden");
    c.turns.forEach(function(t,i){
      var turn=turnEl(i,t.question,t.attachment);
      t.steps.forEach(function(s){renderStep(turn,s);}); renderAnswer(turn,t.answer);
    });
    $("#usage").textContent=(c.tokens||0)+" tokens · "+money(c.cost);
  });
}

function loadHistory(){
  fetch("/api/history").then(function(r){return r.json();}).then(function(h){
    var ul=$("#history"); ul.textContent="";
    h.items.forEach(function(item){
      var li=el("li"), a=el("a"); a.dataset.id=item.id;
      a.appendChild(el("span","kind",item.kind)); a.appendChild(el("span",null," "+(item.title||"(untitled)")));
      a.appendChild(el("small",null,item.when+" · "+item.answered+"/"+item.tasks+" answered · "+money(item.cost)));
      if(item.results){ a.href=item.results; }
      else { a.href="#"+item.id; a.addEventListener("click",function(ev){ev.preventDefault(); openPast(item,a);}); }
      li.appendChild(a); ul.appendChild(li);
    });
  });
}

$("#ask").addEventListener("submit",ask);
$("#question").addEventListener("keydown",function(ev){
  if(ev.key==="Enter"&&!ev.shiftKey&&!ev.isComposing){ ev.preventDefault(); $("#ask").requestSubmit(); }
});
$("#stop").addEventListener("click",stop);
$("#new").addEventListener("click",fresh);
$("#leave").addEventListener("click",fresh);
window.agentPage={el:el, money:money, safeHref:safeHref};  // for research.js: one way to draw these
if(/[?&]token=/.test(location.search)) history.replaceState(null,"",location.pathname);
loadHistory();
})();
